/**
 * The pages' one script, served from this site at PAGE_SCRIPT_PATH (the page policy allows no
 * inline script and no other source). It shows each snippet's Copy button and copies the whole
 * snippet on a click: through the Clipboard API where the page is a secure context, else by
 * selecting the snippet and asking the browser to copy the selection. Without the script the
 * buttons stay hidden and a click on a snippet still selects all of it (`user-select: all`).
 */
export const PAGE_SCRIPT = `'use strict';
(function () {
  function selectAll(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }
  function copy(pre) {
    var text = pre.textContent || '';
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    selectAll(pre);
    return document.execCommand('copy') ? Promise.resolve() : Promise.reject(new Error('copy refused'));
  }
  var snippets = document.querySelectorAll('.snippet');
  for (var i = 0; i < snippets.length; i++) {
    (function (snippet) {
      var pre = snippet.querySelector('pre');
      var button = snippet.querySelector('button.copy-button');
      if (!pre || !button) return;
      var timer;
      button.hidden = false;
      button.addEventListener('click', function () {
        copy(pre).then(
          function () { button.textContent = 'Copied'; },
          function () { selectAll(pre); button.textContent = 'Press Ctrl+C'; }
        );
        clearTimeout(timer);
        timer = setTimeout(function () { button.textContent = 'Copy'; }, 2000);
      });
    })(snippets[i]);
  }
})();
`;
