/**
 * A key of the run store's request keys (`bindRequest`, `setRequest`, `lookupRequest`,
 * `releaseRequest`). Only {@link requestKeyFamily} makes one, so every key a package writes
 * is declared once, in that package's `request-keys.ts`, and none is built by hand at a call.
 */
export type RequestKey = string & { readonly requestKey: unique symbol };

/** Longest key the stores take (see the port). */
const maxKeyLength = 512;

const word = /^[a-z][a-z-]*$/;

/**
 * Where each family was spelled before it moved into its package's namespace
 * (`slack:status` ← `slack-status`). A key lives up to 30 days, so for that long the stores
 * still find a binding under the former spelling (see {@link formerRequestKey}); a family
 * made after the move has none.
 */
const formerFamilies = new Map<string, string>();

/**
 * The builder of one family of request keys, in the namespace of the package that owns it:
 * `requestKeyFamily('slack', 'status')(jobId)` is `slack:status:<jobId>`, parts joined with
 * `:`. `formerly` is the family's spelling from before namespaces (`slack-status`), read
 * until keys written under it have expired.
 */
export function requestKeyFamily<Parts extends readonly string[]>(
  namespace: string,
  family: string,
  options: { formerly?: string } = {},
): (...parts: Parts) => RequestKey {
  for (const name of [namespace, family])
    if (!word.test(name)) throw new RangeError(`a request key namespace or family is lower-case words: ${name}`);
  const prefix = `${namespace}:${family}`;
  if (options.formerly !== undefined) formerFamilies.set(prefix, options.formerly);
  return (...parts) => {
    const key = [prefix, ...parts].join(':');
    if (key.length > maxKeyLength)
      throw new RangeError(`request key over ${maxKeyLength} characters: ${key.slice(0, 80)}…`);
    return key as RequestKey;
  };
}

/**
 * The spelling `key` had before its family moved into a namespace, when it had one: the
 * stores read a binding there as the key's own, so a message Slack redelivers across the
 * upgrade is still claimed once. Undefined for every other key.
 */
export function formerRequestKey(key: string): string | undefined {
  const [namespace, family] = key.split(':', 2);
  const prefix = `${namespace}:${family}`;
  const former = formerFamilies.get(prefix);
  return former === undefined ? undefined : `${former}${key.slice(prefix.length)}`;
}
