/**
 * A key of the run store's request keys (`bindRequest`, `setRequest`, `lookupRequest`,
 * `releaseRequest`). Only {@link requestKeyFamily} makes one, so every key a package writes
 * is declared once, in that package's `request-keys.ts`, and none is built by hand at a call.
 */
export type RequestKey = string & { readonly requestKey: unique symbol };

/** Longest key the stores take (see the port). */
const maxKeyLength = 512;

/**
 * The builder of one family of request keys: `requestKeyFamily('slack-status')(jobId)` is
 * `slack-status:<jobId>`. The family names are the strings the stores already hold (a key
 * lives up to 30 days, so renaming one would lose what a running fleet remembers); each is
 * owned by one package, and the parts are joined with `:`.
 */
export function requestKeyFamily<Parts extends readonly string[]>(family: string): (...parts: Parts) => RequestKey {
  if (!/^[a-z][a-z-]*(:[a-z]+)?$/.test(family))
    throw new RangeError(`a request key family is lower-case words: ${family}`);
  return (...parts) => {
    const key = [family, ...parts].join(':');
    if (key.length > maxKeyLength)
      throw new RangeError(`request key over ${maxKeyLength} characters: ${key.slice(0, 80)}…`);
    return key as RequestKey;
  };
}
