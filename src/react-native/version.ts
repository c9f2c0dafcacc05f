/**
 * The library's version, sent as `sdk` and in the user agent. It is a constant (not read from a
 * package.json at run time: Metro bundles no package.json reads); scripts/build-react-native.js
 * refuses to build when it differs from the root package.json's version, and a unit test checks it.
 */
export const SDK_VERSION = '0.1.0';
export const SDK_NAME = 'rampart-react-native';
