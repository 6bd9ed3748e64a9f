// The demo page at /: sign in as a demo user (or use the BeCoMe app's stored token, or an
// anonymous demo token), pick a project, and talk to the panel mounted in #assistant.
"use strict";

(function () {
  const A = window.BecomeAssistant;
  const form = document.getElementById("demo-login");
  const email = document.getElementById("demo-email");
  const password = document.getElementById("demo-password");
  const signOut = document.getElementById("demo-signout");
  const signIn = document.getElementById("demo-signin");
  const fields = Array.from(form.querySelectorAll(".demo-field"));
  const who = document.getElementById("demo-who");
  const state = {token: null, user: null, whoKey: null, whoParams: null};
  // The demo sign-in lasts as long as the tab (sessionStorage), across reloads.
  const SIGNIN_KEY = "become-assistant.demo-signin";
  let kept = null;
  try { kept = JSON.parse(window.sessionStorage.getItem(SIGNIN_KEY) || "null"); } catch (err) {
    kept = null;
  }
  if (kept && typeof kept.token === "string") state.token = kept.token;  // before the panel asks

  function storedAppToken() {
    try { return window.localStorage.getItem("become_token"); } catch (err) { return null; }
  }

  // The tab's anonymous demo token (the panel keeps it; a refusal says why, see panel.js).
  function anonymousToken() { return A.anonymousToken(panel.lang); }

  // The token the panel sends: the demo sign-in's, else the app's, else an anonymous one.
  async function getToken(opts) {
    if (state.token || storedAppToken()) return state.token || storedAppToken();
    if (opts && opts.fresh) A.forgetAnonymousToken();  // expired: a new anonymous visitor
    return anonymousToken();
  }

  const panel = A.mount(document.getElementById("assistant"), {
    getToken: getToken, projectPicker: true, setDocumentLang: true,
    signedIn: () => !!(state.token || storedAppToken()),
  });

  function setWho(key, params) {
    state.whoKey = key;
    state.whoParams = params || null;
    who.textContent = key ? A.t(panel.lang, key, params) : "";
  }

  function translatePage() {
    document.querySelectorAll("[data-i18n]").forEach((node) => {
      node.textContent = A.t(panel.lang, node.dataset.i18n);
    });
    document.title = A.t(panel.lang, "panel.title");
    if (state.whoKey) setWho(state.whoKey, state.whoParams);
  }

  // Signed in: only "Sign out" stays; signed out: the empty fields and "Sign in".
  function signedIn(token, key, params) {
    state.token = token;
    try {
      if (token) window.sessionStorage.setItem(SIGNIN_KEY, JSON.stringify({token: token,
        key: key, params: params || null}));
      else window.sessionStorage.removeItem(SIGNIN_KEY);
    } catch (err) { /* storage off: the sign-in lasts until a reload */ }
    signOut.hidden = !token;
    signIn.hidden = !!token;
    for (const field of fields) field.hidden = !!token;
    if (!token) email.value = "";
    password.value = "";
    setWho(key, params);
    panel.loadProjects();
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    setWho("demo.signingIn");
    let resp;
    try {
      resp = await fetch("/api/v1/dev/login", {
        method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({email: email.value.trim(), password: password.value}),
      });
    } catch (err) {
      setWho("demo.loginFailed", {text: A.t(panel.lang, "error.connection")});
      return;
    }
    if (resp.status === 404) {  // no app to sign in to here: an anonymous demo token
      try {
        signedIn(await anonymousToken(), "demo.loginUnavailable");
      } catch (err) {
        setWho("demo.loginFailed", {text: err.message});
      }
      return;
    }
    let body = null;
    try { body = await resp.json(); } catch (err) { body = null; }
    if (!resp.ok || !body || !body.access_token) {
      const text = body && body.error ? body.error.message : A.t(panel.lang, "error.signIn");
      setWho("demo.loginFailed", {text: text});
      return;
    }
    signedIn(body.access_token, "demo.signedIn", {user: email.value.trim()});
    signOut.focus();
  });

  signOut.addEventListener("click", () => {
    panel.signOut();  // the chat and the tab's storage go with the sign-in
    signedIn(null, storedAppToken() ? "demo.appToken" : "demo.anonymous");
    email.focus();  // the fields are back
  });

  document.addEventListener("ba-languagechange", translatePage);
  if (state.token) signedIn(kept.token, kept.key, kept.params);
  else setWho(storedAppToken() ? "demo.appToken" : "demo.anonymous");
  translatePage();
})();
