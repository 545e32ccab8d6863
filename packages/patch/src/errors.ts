import { CodefleetError } from '@codefleet/core';

/**
 * The only error the parser throws: the patch cannot be read. `position` is the
 * character offset (JSON syntax errors) or the command index, when known.
 */
export class PatchParseError extends CodefleetError {
  readonly position?: number;

  constructor(message: string, position?: number) {
    super('invalid_job', message, { verdict: 'agent_fixable', details: position === undefined ? {} : { position } });
    this.name = 'PatchParseError';
    if (position !== undefined) this.position = position;
  }
}
