// The bar above GraphiQL that says who is signed in (a browser session's user, asked of /json,
// which never makes a browser prompt for Basic credentials) with a sign-out button, or links to the
// sign-in page. Self-contained like the page itself: no external assets.

const STYLE = `
  body { display: flex; flex-direction: column; height: 100vh; margin: 0; }
  #root { flex: 1; min-height: 0; }
  /* GraphiQL's own sheet makes its containers (two, nested) 100vh tall: below the bar it would lose its bottom edge. */
  #root .graphiql-container { height: 100%; }
  #session-bar { flex: none; display: flex; gap: .8rem; align-items: center; justify-content: flex-end;
    padding: .3rem .8rem; font: 13px system-ui, sans-serif; background: #f0f1f4; border-bottom: 1px solid #dde; }
  #session-bar form { margin: 0; }
  #session-bar button { font: inherit; padding: .1rem .6rem; cursor: pointer; }
`;

// Built with DOM calls (never markup from data): the user's name and address are text.
const SCRIPT = `
(function () {
  var bar = document.getElementById('session-bar');
  var csrf = (document.cookie.match(/(?:^|;\\s*)(?:__Host-)?csrftoken=([^;]+)/) || [])[1] || '';
  function element(name, properties, children) {
    var node = document.createElement(name);
    Object.keys(properties).forEach(function (key) { node[key] = properties[key]; });
    (children || []).forEach(function (child) { node.append(child); });
    return node;
  }
  fetch('/json/users/me', { credentials: 'same-origin', headers: { accept: 'application/json' } })
    .then(function (response) { return response.ok ? response.json() : null; })
    .then(function (me) {
      if (!me || !me.email) return;
      var signOut = element('form', { method: 'post', action: '/accounts/logout/' }, [
        element('input', { type: 'hidden', name: 'csrfmiddlewaretoken', value: csrf }),
        element('button', { type: 'submit', id: 'sign-out', textContent: 'Sign out' }),
      ]);
      bar.replaceChildren(element('span', { id: 'signed-in-as', textContent: 'Signed in as ' + me.full_name + ' <' + me.email + '>' }), signOut);
    })
    .catch(function () {});
})();
`;

/** Markup GraphiQL's page gets before its root element. */
export const SESSION_BAR = `<style>${STYLE}</style>
<div id="session-bar"><a id="sign-in" href="/accounts/login/?next=%2Fgraphql">Sign in</a><span>(or send an Authorization header)</span></div>
<script>${SCRIPT}</script>
`;
