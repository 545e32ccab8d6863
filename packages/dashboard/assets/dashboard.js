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
  const source = new EventSource(url);
  // The server's problem event is plain text (a backend that cannot be reached): shown as
  // text, never as markup. It stays until the next update.
  source.addEventListener('problem', function (event) {
    say(event.data);
  });
  source.addEventListener('error', function () {
    if (source.readyState !== EventSource.CLOSED) say('Live updates interrupted: reconnecting to the dashboard…');
  });
  source.addEventListener('open', function () {
    say('');
  });
  source.addEventListener('update', function (event) {
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
