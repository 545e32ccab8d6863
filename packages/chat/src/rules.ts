import { createContext, Script, type Context } from 'node:vm';
import type { RouterConfig } from '@codefleet/config';

/** Characters of a message the rules look at: enough for intent, little for a slow pattern. */
export const maxRuleInputChars = 2_000;
/**
 * How long one rule may take on one message before it counts as not matching. Far above
 * what any sane pattern needs on {@link maxRuleInputChars} characters (microseconds), and
 * far below what a backtracking one takes: the limit is wall time, so it must leave room
 * for a GC pause or a busy host, which must not re-route a message (it did at 50 ms).
 */
export const ruleTimeoutMs = 1_000;

/** A rule that matched, or one that was skipped because it ran too long. */
export type RuleMatch = { index: number; rule: RouterConfig['rules'][number] };

/**
 * The operator's rule dictionary, compiled once. The patterns are the operator's, the text
 * is not: a pattern that backtracks badly on some input could stall the producer, so each
 * test runs in its own VM context under a timeout (V8 interrupts a running regular
 * expression there) on at most {@link maxRuleInputChars} characters. A rule that times out
 * is reported through `onTimeout` and does not match.
 */
export interface RuleBook {
  /** The first rule whose pattern matches `text`, in config order. */
  match(text: string, onTimeout?: (index: number) => void): RuleMatch | undefined;
}

const testScript = new Script('patterns[index].test(input)');

/** Compiles `rules` (JavaScript regular expressions, case-insensitive, unicode). */
export function compileRules(rules: RouterConfig['rules']): RuleBook {
  let context: Context | undefined;
  const sandbox = (): Context => {
    if (context === undefined) {
      context = createContext({ sources: rules.map((r) => r.pattern), index: 0, input: '' });
      new Script('globalThis.patterns = sources.map((s) => new RegExp(s, "iu"))').runInContext(context);
    }
    return context;
  };
  return {
    match(text, onTimeout) {
      if (rules.length === 0) return undefined;
      const ctx = sandbox();
      ctx.input = text.slice(0, maxRuleInputChars);
      for (const [index, rule] of rules.entries()) {
        ctx.index = index;
        let matched: unknown;
        try {
          matched = testScript.runInContext(ctx, { timeout: ruleTimeoutMs });
        } catch {
          onTimeout?.(index);
          continue;
        }
        if (matched === true) return { index, rule };
      }
      return undefined;
    },
  };
}
