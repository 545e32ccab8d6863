import { maxReasonChars } from '../actions.js';
import { html, type Html } from '../html.js';

/** The confirmation step of an action that cannot be undone. */
export interface Confirmation {
  /** Where the form posts. */
  action: string;
  /** The button's label, e.g. "Cancel the run". */
  label: string;
  /** What the action is done to: a title, a repository, a state. */
  target: Html;
  /** What happens, in a sentence. */
  consequence: string;
  /** The page to go back to without doing anything. */
  back: string;
  csrf: string;
}

/**
 * A page of its own rather than a dialog over the live part of a page: a live update would
 * replace a half-typed reason, and a page needs no script (the CSP forbids inline ones). The
 * reason is required and bounded here and again by the server.
 */
export function confirmBody(c: Confirmation): Html {
  return html`<section class="confirm">
${c.target}
<p class="notice">${c.consequence}</p>
<form method="post" action="${c.action}" class="confirm">
<input type="hidden" name="csrf" value="${c.csrf}">
<label for="reason">Reason (kept in the run's journal, with your name)</label>
<textarea id="reason" name="reason" rows="3" required maxlength="${maxReasonChars}"></textarea>
<div class="actions"><button type="submit" class="danger">${c.label}</button> <a href="${c.back}">Back, do nothing</a></div>
</form>
</section>`;
}
