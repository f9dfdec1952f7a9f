// The review page: it proves who opens it with Telegram's init data (from
// Telegram's script, or from the address, #tgWebAppData, where Telegram puts
// it) or with a /review link's credential (#link=…), asks the server for the
// payload, and posts a decision with the hash it showed.
"use strict";
(function () {
  const approval = decodeURIComponent(location.pathname.split("/").pop());
  const status = document.getElementById("status");
  const tg = window.Telegram && window.Telegram.WebApp;
  let shown = "";

  function credential() {
    if (tg && tg.initData) return { init_data: tg.initData };
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.get("tgWebAppData")) return { init_data: h.get("tgWebAppData") };
    if (h.get("link")) return { link: h.get("link") };
    return {};
  }

  function say(text, refused) {
    status.textContent = text;
    status.className = refused ? "refused" : "";
  }

  async function post(path, body) {
    const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(Object.assign({ approval: approval }, credential(), body)) });
    let a = {};
    try { a = await r.json(); } catch (e) { a = { error: "The server's answer could not be read (" + r.status + ")." }; }
    a.status = r.status;
    return a;
  }

  async function load() {
    const a = await post("api/show", {});
    if (a.error) { say(a.error, true); return; }
    shown = a.sha256;
    document.getElementById("payload").innerHTML = a.html;
    document.getElementById("text").value = a.text || "";
    document.getElementById("edit").hidden = !a.editable;
    document.getElementById("asks-code").hidden = !a.code;
    document.getElementById("decide").hidden = false;
    if (a.step_up === "passkey") passkeyApproval(a.via);
    say("Every byte that will leave is below. Payload sha256 " + shown.slice(0, 12) + "…, as on the card.");
  }

  async function decide(decision, text) {
    for (const b of document.querySelectorAll("#decide button")) b.disabled = true;
    say("Recording…");
    const code = decision === "approve" ? document.getElementById("code").value : "";
    const a = await post("api/decide", { sha256: shown, decision: decision, text: text, code: code });
    if (a.error) {
      say(a.error, true);
      if (a.status >= 500 || a.status === 400) for (const b of document.querySelectorAll("#decide button")) b.disabled = false;
      return;
    }
    say(a.said || "Recorded.", !a.done);
    if (!a.done) { for (const b of document.querySelectorAll("#decide button")) b.disabled = false; return; }
    document.body.dataset.decided = decision;
  }

  // passkeyApproval makes Approve sign the payload with the approver's
  // passkey: in a browser, through WebAuthn; in Telegram's view, which has
  // no WebAuthn, by opening this approval in the phone's browser.
  function passkeyApproval(via) {
    const approve = document.getElementById("approve");
    if (via !== "link") {
      document.getElementById("passkey-note").hidden = false;
      approve.textContent = "🔑 Approve with your passkey, in the browser";
      approve.onclick = async () => {
        const a = await post("api/passkey/browser", {});
        if (a.error) { say(a.error, true); return; }
        if (tg && tg.openLink) tg.openLink(a.link); else location.href = a.link;
        say("Opened in your browser: approve there with your passkey.");
      };
      return;
    }
    approve.textContent = "🔑 Approve with your passkey";
    approve.onclick = async () => {
      for (const b of document.querySelectorAll("#decide button")) b.disabled = true;
      say("Waiting for your passkey…");
      const a = await countersignPasskey.approve("api/passkey/begin", "api/passkey/finish",
        Object.assign({ approval: approval, sha256: shown }, credential()));
      if (a.error) {
        say(a.error, true);
        for (const b of document.querySelectorAll("#decide button")) b.disabled = false;
        return;
      }
      say(a.said || "Approved with your passkey.");
      document.body.dataset.decided = "approve";
    };
  }

  document.getElementById("approve").onclick = () => decide("approve");
  document.getElementById("reject").onclick = () => decide("reject");
  document.getElementById("edit").onclick = () => { document.getElementById("editing").hidden = false; };
  document.getElementById("save").onclick = () => decide("edit", document.getElementById("text").value);
  if (tg) { try { tg.ready(); tg.expand(); } catch (e) {} }
  load().catch((e) => say("The payload could not be loaded: " + e, true));
})();
