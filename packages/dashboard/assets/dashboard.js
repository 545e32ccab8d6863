// Live updates: the element marked data-live is replaced with each `update` the server
// sends (markup it rendered and escaped). Which <details> the reader had open is kept.
/* global document, EventSource */
'use strict';
(function () {
  const live = document.getElementById('live');
  const url = live && live.dataset.live;
  if (!url || typeof EventSource === 'undefined') return;
  const problem = document.getElementById('problem');
  const say = function (text) {
    if (!problem) return;
    problem.textContent = text;
    problem.hidden = text === '';
    // What is below was read before the problem: dimmed, so "Nothing needs you" is not believed.
    live.classList.toggle('stale', text !== '');
  };
  // Set while the server refuses this page a stream (too many open): its banner stays until
  // an update comes, through the reconnects the browser makes meanwhile.
  let refused = false;
  const source = new EventSource(url);
  // The server's problem and refused events are plain text: shown as text, never as markup.
  // A problem stays until the next update.
  source.addEventListener('problem', function (event) {
    say(event.data);
  });
  source.addEventListener('refused', function (event) {
    refused = true;
    say(event.data);
    if (problem) problem.dataset.problem = 'refused';
  });
  source.addEventListener('error', function () {
    if (source.readyState === EventSource.CLOSED) {
      // Closed for good: the server answered with an error (a login that ended, a restart).
      refused = false;
      if (problem) delete problem.dataset.problem;
      say('Live updates stopped: reload the page (you may need to log in again).');
    } else if (!refused) say('Live updates interrupted: reconnecting to the dashboard…');
  });
  source.addEventListener('open', function () {
    if (!refused) say('');
  });
  source.addEventListener('update', function (event) {
    refused = false;
    if (problem) delete problem.dataset.problem;
    say('');
    const open = Array.from(live.querySelectorAll('details')).map(function (d) {
      return d.open;
    });
    live.innerHTML = event.data;
    live.querySelectorAll('details').forEach(function (d, i) {
      if (i < open.length) d.open = open[i];
    });
    document.body.dataset.updated = String(Date.now());
  });
  source.addEventListener('gone', function () {
    source.close();
  });
})();

// Durations that go on (a running job's step and job time): counted on every second from
// the server's clock at render (data-now) to the start (data-since), both epoch ms, as
// formatDuration of @codefleet/core shows them.
(function () {
  const pad = function (n) {
    return String(n).padStart(2, '0');
  };
  const format = function (ms) {
    if (!(ms >= 0)) ms = 0;
    if (ms < 1000) return Math.round(ms) + 'ms';
    if (ms < 10000) return (Math.floor(ms / 100) / 10).toFixed(1) + 's';
    const s = Math.floor(ms / 1000);
    if (s < 60) return s + 's';
    const m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + pad(s % 60) + 's';
    const h = Math.floor(m / 60);
    if (h < 48) return h + 'h ' + pad(m % 60) + 'm';
    return Math.floor(h / 24) + 'd ' + pad(h % 24) + 'h';
  };
  const tick = function () {
    document.querySelectorAll('[data-since][data-now]').forEach(function (el) {
      if (el.dataset.seen === undefined) el.dataset.seen = String(Date.now());
      const since = Number(el.dataset.since);
      const now = Number(el.dataset.now) + (Date.now() - Number(el.dataset.seen));
      el.textContent = format(now - since);
    });
  };
  setInterval(tick, 1000);
})();
