/**
 * The host and port of a gRPC address or peer ("host:port", "[::1]:port"), the host without its
 * IPv6 brackets; an address with no port is all host.
 */
export function splitHostPort(address: string): { readonly host: string; readonly port: string } {
  const colon = address.lastIndexOf(":");
  if (colon <= 0) return { host: address, port: "" };
  return { host: address.slice(0, colon).replace(/^\[|\]$/g, ""), port: address.slice(colon + 1) };
}
