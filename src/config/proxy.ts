/**
 * The HTTP proxy (docs/deploy.md, "Behind an HTTP proxy"): the standard variables, read
 * once with the rest of the configuration. Upstream requests and alert deliveries both
 * go through it.
 */

/** The standard proxy variables, as curl and undici read them. */
export interface ProxySettings {
  httpProxy?: string | undefined;
  httpsProxy?: string | undefined;
  noProxy?: string | undefined;
}

/**
 * The proxy settings in an environment: the lowercase variable wins over the uppercase
 * one, as curl reads them. Undefined when neither proxy variable is set.
 */
export function proxyFromEnvironment(
  env: Readonly<Record<string, string | undefined>>,
): ProxySettings | undefined {
  const read = (name: string) => env[name.toLowerCase()]?.trim() || env[name]?.trim() || undefined;
  const settings = {
    httpProxy: read('HTTP_PROXY'),
    httpsProxy: read('HTTPS_PROXY'),
    noProxy: read('NO_PROXY'),
  };
  return settings.httpProxy || settings.httpsProxy ? settings : undefined;
}
