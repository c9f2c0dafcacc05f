import { countryName, distanceKm, isDisposableEmail } from '../../../src/intel';

describe('isDisposableEmail', () => {
  it.each([
    ['user@mailinator.com', true],
    ['mailinator.com', true],
    ['user@sub.mailinator.com', true],
    ['a.b.mailinator.com', true],
    ['User@MAILINATOR.COM', true],
    ['  someone@Mailinator.Com  ', true],
    ['x@yopmail.com', true],
    ['x@anything.33mail.com', true], // wildcard list
    ['user@gmail.com', false],
    ['gmail.com', false],
    ['user@mailinatorx.com', false], // a suffix match must be at a label boundary
    ['user@outlook.com', false],
    ['user@protonmail.com', false],
    ['user@mailinator.com.example.org', false],
    ['', false],
    ['@', false],
    ['user@', false],
  ])('%j -> %s', (input, expected) => {
    expect(isDisposableEmail(input)).toBe(expected);
  });
});

describe('countryName', () => {
  it.each([
    ['US', 'United States'],
    ['us', 'United States'],
    ['DE', 'Germany'],
    ['GB', 'United Kingdom'],
    ['AU', 'Australia'],
    ['HK', 'Hong Kong'],
    ['XK', 'Kosovo'],
    ['ZZ', null],
    ['QQ', null],
    ['USA', null],
    ['', null],
    ['1A', null],
  ])('%j -> %j', (code, expected) => {
    expect(countryName(code)).toBe(expected);
  });
});

describe('distanceKm', () => {
  const london = { lat: 51.5074, lon: -0.1278 };
  const newYork = { lat: 40.7128, lon: -74.006 };

  it('is zero for the same point', () => {
    expect(distanceKm(london, london)).toBe(0);
  });

  it('London to New York is about 5570 km, symmetrically', () => {
    expect(Math.abs(distanceKm(london, newYork) - 5570)).toBeLessThan(10);
    expect(distanceKm(newYork, london)).toBeCloseTo(distanceKm(london, newYork), 6);
  });

  it('antipodes are half the circumference apart', () => {
    expect(Math.abs(distanceKm({ lat: 0, lon: 0 }, { lat: 0, lon: 180 }) - 20015)).toBeLessThan(5);
  });
});
