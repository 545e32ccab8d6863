/**
 * Reads a stream (an HTTP request body) whole, or stops once it passed `limit` bytes and
 * resolves undefined: a receiver answers 413 without holding an attacker's gigabyte.
 */
export async function readBounded(source: AsyncIterable<Uint8Array>, limit: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of source) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}
