// The demo's page: draws the view the server keeps (GET /api/view, asked
// again after each change) and sends what the person writes and taps.
"use strict";

const state = { key: "", view: null, replyTo: 0, dismissed: 0, answers: -1 };
const $ = (sel, root = document) => root.querySelector(sel);

async function post(path, body) {
  const r = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body || {}),
  });
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()));
}

function showStatus(text) {
  const el = $("#status");
  el.textContent = text;
  el.hidden = !text;
}

async function follow() {
  for (;;) {
    try {
      const r = await fetch("/api/view?after=" + encodeURIComponent(state.key));
      if (!r.ok) throw new Error("the demo answered " + r.status);
      const data = await r.json();
      showStatus("");
      if (data.key !== state.key) {
        state.key = data.key;
        state.view = data.view;
        draw(data.view);
      }
    } catch (e) {
      showStatus("The demo does not answer (" + e.message + "); trying again.");
      await new Promise((done) => setTimeout(done, 1000));
    }
  }
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function draw(view) {
  const [you, target] = view.chats;
  document.body.dataset.you = you.id;
  document.body.dataset.target = target.id;
  for (const span of document.querySelectorAll(".target-id")) span.textContent = target.id;
  drawChat($("#you"), you, true);
  drawChat($("#target"), target, false);
  drawPrompt(you);
  drawEnvelopes(view.envelopes);
  drawToast(view.answers);
  const lose = $("#lose");
  lose.disabled = view.armed;
  $("#armed").textContent = view.armed ? "Armed: the next send to " + target.id + " loses its answer." : "";
  const app = view.authenticator;
  $("#authenticator").textContent = app ? "Your authenticator app: " + app.code + " (for " + app.left + " s more)" : "";
}

function drawChat(section, chat, mine) {
  $(".title", section).textContent = chat.title;
  const list = $(".messages", section);
  const atEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.replaceChildren();
  for (const m of chat.messages) list.append(bubble(chat, m, mine));
  if (atEnd) list.scrollTop = list.scrollHeight;
}

function bubble(chat, m, tappable) {
  const b = el("div", "msg " + (m.mine ? "mine" : "bot"));
  b.dataset.id = m.id;
  if (m.media) b.append(el("div", "media", m.media));
  b.append(el("div", "text", m.text));
  if (m.edited) b.append(el("div", "edited", "edited"));
  if (m.lost) {
    b.classList.add("lost");
    b.append(el("div", "lost-note", "Telegram took it; its answer to the bot was lost"));
  }
  for (const row of m.buttons || []) {
    const r = el("div", "keys");
    for (const k of row) {
      if (k.url) {
        const a = el("a", "key", k.text);
        a.href = k.url;
        a.target = "_blank";
        a.rel = "noopener noreferrer";
        r.append(a);
        continue;
      }
      const btn = el("button", "key", k.text);
      btn.type = "button";
      btn.disabled = !tappable;
      btn.addEventListener("click", () => tap(chat.id, m.id, k.data, btn));
      r.append(btn);
    }
    b.append(r);
  }
  return b;
}

async function tap(chat, message, data, btn) {
  btn.classList.add("pressed");
  try {
    await post("/api/tap", { chat, message, data });
  } catch (e) {
    showStatus(e.message);
  }
}

// drawPrompt offers the bot's newest prompt for a reply (an Edit's new text)
// as what the next message answers, until the person answers or cancels it.
function drawPrompt(chat) {
  const last = chat.messages[chat.messages.length - 1];
  state.replyTo = last && !last.mine && last.asks_reply && last.id !== state.dismissed ? last.id : 0;
  $("#you .replying").hidden = !state.replyTo;
}

function drawEnvelopes(envelopes) {
  const box = $("#envelopes");
  if (!envelopes.length) return;
  box.replaceChildren();
  for (const e of envelopes) {
    const card = el("article", "envelope");
    card.dataset.operation = e.operation;
    card.append(el("h3", "", e.operation));
    card.append(el("p", "path", e.path));
    card.append(el("pre", "", e.markdown));
    box.append(card);
  }
}

function drawToast(answers) {
  const seen = state.answers;
  state.answers = answers.length;
  if (seen < 0 || answers.length <= seen) return; // the first view: old answers are not news
  const toast = $("#toast");
  toast.textContent = answers[answers.length - 1];
  toast.hidden = false;
  clearTimeout(drawToast.timer);
  drawToast.timer = setTimeout(() => (toast.hidden = true), 3000);
}

$("#you form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const input = $("#text");
  const text = input.value.trim();
  if (!text) return;
  const replyTo = state.replyTo;
  try {
    await post("/api/say", { text, reply_to: replyTo });
    input.value = "";
    if (replyTo) {
      state.dismissed = replyTo;
      $("#you .replying").hidden = true;
    }
  } catch (e) {
    showStatus(e.message);
  }
});

$("#you .replying .cancel").addEventListener("click", () => {
  state.dismissed = state.replyTo;
  state.replyTo = 0;
  $("#you .replying").hidden = true;
});

$("#lose").addEventListener("click", async () => {
  try {
    await post("/api/lose");
  } catch (e) {
    showStatus(e.message);
  }
});

follow();
