import { CodefleetError, objectIdPattern } from '@codefleet/core';

/** Letters, digits and `._:/-`: nothing that could close an HTML comment or span lines. */
const markerPattern = /^[A-Za-z0-9._:/-]{1,100}$/;
const markerLine = /^<!-- codefleet:([A-Za-z0-9._:/-]{1,100}) -->$/;

/** Throws `forge_rejected` unless `marker` is a valid comment marker. */
export function checkMarker(marker: string): void {
  if (!markerPattern.test(marker)) {
    throw new CodefleetError(
      'forge_rejected',
      `invalid comment marker ${JSON.stringify(marker.slice(0, 120))}: expected 1-100 of A-Z a-z 0-9 . _ : / -`,
    );
  }
}

/**
 * The stored body of a marked comment: the hidden marker line, then `body` verbatim.
 * GitHub renders the HTML comment as nothing, so readers only see `body`.
 */
export function renderMarked(marker: string, body: string): string {
  checkMarker(marker);
  return `<!-- codefleet:${marker} -->\n${body}`;
}

/**
 * The marker of a stored comment body, read from its first line only: a marker quoted
 * further down (a pasted log, a user's text) must never make us edit the wrong comment.
 */
export function parseMarker(storedBody: string): string | undefined {
  const end = storedBody.indexOf('\n');
  const first = (end < 0 ? storedBody : storedBody.slice(0, end)).replace(/\r$/, '');
  return markerLine.exec(first)?.[1];
}

const pushedLine = /^<!-- codefleet:pushed ([0-9a-f]{40}|[0-9a-f]{64}) -->$/;

/**
 * The hidden line codefleet ends a pull request body with: the commit it pushed last to
 * the head branch. A head that points elsewhere was moved by someone else since.
 */
export function pushedMarker(sha: string): string {
  if (!objectIdPattern.test(sha))
    throw new CodefleetError('forge_rejected', `invalid pushed sha ${JSON.stringify(sha.slice(0, 80))}`);
  return `<!-- codefleet:pushed ${sha} -->`;
}

/**
 * The sha of a pull request body's {@link pushedMarker}, read from its last line only: a
 * marker quoted further up (an issue's text in the task note) never counts.
 */
export function pushedShaOf(body: string): string | undefined {
  const last = body.trimEnd().split('\n').pop()?.replace(/\r$/, '') ?? '';
  return pushedLine.exec(last)?.[1];
}
