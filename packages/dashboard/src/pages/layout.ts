import { html, type Html } from '../html.js';

/** What every page's frame needs. */
export interface PageContext {
  /** The form token POST forms carry. */
  csrf: string;
  readOnly: boolean;
  /** Who is looking, shown beside the log-out button. */
  operator?: string | undefined;
  /** False for a trusted proxy's users: their login is the proxy's, not the dashboard's to end. */
  canLogOut: boolean;
}

/**
 * A whole page. `live` is the events URL whose updates replace the `#live` element (the
 * client script subscribes to it); no inline script or style, so the CSP can forbid both.
 */
export function page(title: string, body: Html, ctx: PageContext, live?: string): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · codefleet</title>
<link rel="stylesheet" href="/assets/dashboard.css">
<script src="/assets/dashboard.js" defer></script>
</head>
<body>
<header>
<nav><a href="/" class="brand">codefleet</a> <a href="/">Overview</a> <a href="/runs">Runs</a> <a href="/queue">Queue</a> <a href="/dead-letters">Dead letters</a> <a href="/eval">Evaluations</a></nav>
${ctx.readOnly ? html`<span class="badge">read-only</span>` : ''}
${ctx.operator === undefined ? '' : html`<span class="operator" data-operator="${ctx.operator}">${ctx.operator}</span>`}
${ctx.canLogOut ? html`<form method="post" action="/logout" class="logout"><input type="hidden" name="csrf" value="${ctx.csrf}"><button type="submit">Log out</button></form>` : ''}
</header>
<main>
<h1>${title}</h1>
<p id="problem" class="error-banner" role="alert" hidden></p>
<div id="live"${live === undefined ? '' : html` data-live="${live}"`}>${body}</div>
</main>
</body>
</html>
`;
}

/** What the login page says above the form. */
export type LoginState =
  /** Nothing: the first visit. */
  | { kind: 'form' }
  /** The token given is no operator's. */
  | { kind: 'failed' }
  /** Too many failed logins: the form is refused unread for `seconds`. */
  | { kind: 'limited'; seconds: number };

/** The login page: the token goes in a POST body, never in a URL that would be logged. */
export function loginPage(state: LoginState): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Log in · codefleet</title>
<link rel="stylesheet" href="/assets/dashboard.css">
</head>
<body>
<main class="login">
<h1>codefleet dashboard</h1>
${loginNotice(state)}
<form method="post" action="/login">
<label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<button type="submit">Log in</button>
</form>
<p class="hint">Your own token (<code>dashboard.operators</code>), the shared one in the variable <code>dashboard.token_env</code> names, or, when neither is set, the one generated in <code>&lt;data_dir&gt;/dashboard-token</code>.</p>
</main>
</body>
</html>
`;
}

function loginNotice(state: LoginState): Html | string {
  if (state.kind === 'failed') return html`<p class="warning" role="alert">That is not a dashboard token.</p>`;
  if (state.kind === 'limited') {
    const minutes = Math.ceil(state.seconds / 60);
    return html`<p class="error-banner" role="alert" data-problem="login-limited">Too many failed logins: try again in ${minutes} minute${minutes === 1 ? '' : 's'}.</p>`;
  }
  return '';
}

/** A POST button for an action, with the form token. */
export function actionButton(action: string, label: string, csrf: string, className = ''): Html {
  return html`<form method="post" action="${action}" class="action"><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="${className}">${label}</button></form>`;
}
