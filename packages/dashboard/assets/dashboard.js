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
