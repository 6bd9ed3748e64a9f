// Minimal panel on protocol v1: ticket -> WebSocket -> ask -> streamed tokens -> sources.
// Everything is written with text nodes; nothing from the server is ever parsed as HTML.
"use strict";

(function () {
  const form = document.getElementById("ask-form");
  const question = document.getElementById("question");
  const button = document.getElementById("ask");
  const answer = document.getElementById("answer");
  const sources = document.getElementById("sources");
  const status = document.getElementById("status");

  async function appToken() {
    // The BeCoMe app keeps its access token in localStorage under become_token;
    // the demo page mints a demo one (dev and test profiles only).
    const stored = window.localStorage.getItem("become_token");
    if (stored) return stored;
    const resp = await fetch("/api/v1/dev/token", {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({user: "demo"}),
    });
    if (!resp.ok) throw new Error("Could not sign in.");
    return (await resp.json()).access_token;
  }

  async function ticket() {
    const resp = await fetch("/api/v1/assistant/tickets", {
      method: "POST", headers: {"Authorization": "Bearer " + await appToken()},
    });
    const body = await resp.json();
    if (!resp.ok) throw new Error(body.error ? body.error.message : "Could not connect.");
    return body.ticket;
  }

  function setStatus(text, isError) {
    status.textContent = text;
    status.className = isError ? "error" : "";
  }

  function showSources(list) {
    sources.replaceChildren();
    for (const s of list) {
      const li = document.createElement("li");
      li.value = s.n;
      const title = document.createElement("strong");
      title.textContent = s.title;
      const section = document.createTextNode(" — " + s.section + " ");
      const excerpt = document.createElement("div");
      excerpt.className = "excerpt";
      excerpt.textContent = s.excerpt;
      li.append(title, section, excerpt);
      sources.append(li);
    }
  }

  async function ask(text) {
    button.disabled = true;
    answer.textContent = "";
    sources.replaceChildren();
    setStatus("Connecting…");
    try {
      const t = await ticket();
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      const ws = new WebSocket(scheme + location.host + "/api/v1/assistant/ws?ticket=" +
                               encodeURIComponent(t));
      ws.onopen = () => {
        ws.send(JSON.stringify({type: "ask", message: text, history: [], project_id: null}));
        setStatus("Thinking…");
      };
      ws.onmessage = (ev) => {
        const f = JSON.parse(ev.data);
        if (f.type === "token") {
          answer.append(document.createTextNode(f.text));
          setStatus("Answering…");
        } else if (f.type === "done") {
          answer.textContent = f.answer;
          showSources(f.sources || []);
          setStatus("Done.");
          answer.dataset.done = "1";
          ws.close();
        } else if (f.type === "error") {
          setStatus(f.message, true);
          ws.close();
        }
      };
      ws.onclose = () => { button.disabled = false; };
      ws.onerror = () => { setStatus("The connection failed.", true); };
    } catch (err) {
      setStatus(err.message, true);
      button.disabled = false;
    }
  }

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = question.value.trim();
    if (text) ask(text);
  });
})();
