/**
 * Curated hosting / cloud / CDN / VPN / proxy networks, used to set `IpIntel.hosting`.
 *
 * Rationale: sign-ups and log-ins from data-centre address space are far more often scripted
 * (credential stuffing, fake accounts) or anonymised (VPN/proxy egress) than residential or
 * mobile traffic, so risk scoring wants to know about them. Two signals are combined:
 *  1. this hand-picked list of autonomous systems operated by well-known cloud, hosting, CDN,
 *     VPN and secure-web-proxy companies (numbers taken from the operators' public PeeringDB /
 *     RIR registrations, and each one checked against the organisation name in the bundled
 *     @ip-location-db/asn data, so a typo cannot silently flag an ISP);
 *  2. AS organisation names containing hosting vocabulary (hosting, cloud, server(s),
 *     data center/centre, VPS, colo/colocation, dedicated), which catches the long tail of
 *     small hosters without maintaining thousands of numbers.
 * Large transit/ISP networks (e.g. Cogent 174, Hurricane Electric 6939) are deliberately absent:
 * they carry residential and business customers too.
 */

/** ASN -> operator, for the well-known hosting/cloud/CDN/VPN networks. */
export const HOSTING_ASNS: ReadonlyMap<number, string> = new Map<number, string>([
  // Hyperscale clouds
  [16509, 'Amazon AWS'],
  [14618, 'Amazon AWS'],
  [8987, 'Amazon AWS (Ireland)'],
  [38895, 'Amazon AWS (Japan)'],
  [15169, 'Google'],
  [396982, 'Google Cloud'],
  [19527, 'Google'],
  [139070, 'Google Asia Pacific'],
  [8075, 'Microsoft Azure'],
  [8068, 'Microsoft'],
  [8069, 'Microsoft'],
  [31898, 'Oracle Cloud'],
  [36351, 'IBM Cloud (SoftLayer)'],
  [45102, 'Alibaba Cloud'],
  [37963, 'Alibaba Cloud (China)'],
  [132203, 'Tencent Cloud'],
  [45090, 'Tencent Cloud (China)'],
  [136907, 'Huawei Cloud'],
  [55990, 'Huawei Cloud (China)'],
  [135377, 'UCloud'],
  [23576, 'Naver Cloud'],
  [200350, 'Yandex Cloud'],
  // Developer clouds / VPS / dedicated hosting
  [14061, 'DigitalOcean'],
  [63949, 'Akamai Connected Cloud (Linode)'],
  [20473, 'Vultr (The Constant Company / Choopa)'],
  [16276, 'OVHcloud'],
  [35540, 'OVHcloud'],
  [24940, 'Hetzner'],
  [213230, 'Hetzner Cloud'],
  [212317, 'Hetzner'],
  [51167, 'Contabo'],
  [40021, 'Contabo'],
  [12876, 'Scaleway'],
  [202053, 'UpCloud'],
  [197540, 'netcup'],
  [8560, 'IONOS'],
  [47583, 'Hostinger'],
  [26496, 'GoDaddy'],
  [398101, 'GoDaddy'],
  [22612, 'Namecheap'],
  [46606, 'Unified Layer (Bluehost)'],
  [27357, 'Rackspace'],
  [33070, 'Rackspace'],
  [19994, 'Rackspace'],
  [54290, 'Hostwinds'],
  [36352, 'ColoCrossing'],
  [40676, 'Psychz Networks'],
  [8100, 'QuadraNet'],
  [53667, 'FranTech / BuyVM'],
  [36007, 'Kamatera'],
  [19318, 'Interserver'],
  [33387, 'Nocix'],
  [23470, 'ReliableSite'],
  [46844, 'Sharktech'],
  [35913, 'DediPath'],
  [29802, 'Hivelocity'],
  [19969, "Joe's Datacenter"],
  [11878, 'tzulo'],
  [62904, 'Eonix'],
  [7979, 'Servers.com'],
  [396356, 'Latitude.sh'],
  [54825, 'Equinix Metal (Packet)'],
  [40509, 'Fly.io'],
  [9370, 'SAKURA Internet'],
  [49505, 'Selectel'],
  [9123, 'Timeweb'],
  [210644, 'Aeza'],
  [44477, 'Stark Industries'],
  [57043, 'HOSTKEY'],
  [50673, 'Serverius'],
  [49981, 'WorldStream'],
  [62240, 'Clouvider'],
  [199524, 'G-Core Labs'],
  [21859, 'Zenlayer'],
  [60781, 'Leaseweb'],
  [16265, 'Leaseweb'],
  [28753, 'Leaseweb'],
  [59253, 'Leaseweb'],
  [32613, 'Leaseweb'],
  // VPN / anonymising egress networks
  [9009, 'M247'],
  [60068, 'Datacamp / CDN77'],
  [212238, 'Datacamp / CDN77'],
  [207137, 'PacketHub (NordVPN)'],
  [39351, '31173 Services (Mullvad)'],
  [136258, 'BrainStorm Network'],
  [60729, 'Stiftung Erneuerbare Freiheit (Tor exit relays)'],
  // CDN / edge / secure-web-proxy (WARP, iCloud Private Relay and corporate proxies egress here)
  [13335, 'Cloudflare'],
  [209242, 'Cloudflare'],
  [54113, 'Fastly'],
  [20940, 'Akamai'],
  [16625, 'Akamai'],
  [22616, 'Zscaler'],
]);

/** AS organisation names that read like a hosting business. Word boundaries avoid e.g. "Colombia". */
const HOSTING_ORG_RE =
  /hosting|\bcloud|\bservers?\b|\bdata ?cent(?:er|re)s?\b|\bvps\b|\bcolo(?:cation)?\b|\bdedicated\b/i;

/** True when the AS is a known hosting/cloud/VPN/proxy network, by number or by organisation name. */
export function isHostingNetwork(asn: number, organization: string): boolean {
  return HOSTING_ASNS.has(asn) || HOSTING_ORG_RE.test(organization);
}
