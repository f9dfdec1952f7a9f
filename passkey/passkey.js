// The browser's side of a passkey ceremony (Countersign's passkey package):
// ask the server for the options, hand them to the browser's WebAuthn, and
// post what the authenticator made back. The server checks everything; this
// script only carries. WebAuthn runs on a secure origin in a real browser,
// not in Telegram's Mini App webview.
const countersignPasskey = (() => {
  async function post(url, body) {
    const r = await fetch(url, {method: "POST", headers: {"Content-Type": "application/json"}, body: body || "{}", credentials: "same-origin"});
    let answer;
    try { answer = await r.json(); } catch (e) { answer = {ok: false, error: "the server answered " + r.status}; }
    if (!r.ok && !answer.error) answer = {ok: false, error: "the server answered " + r.status};
    return answer;
  }
  // ceremony runs one enrolment ("create") or approval ("get"): it posts
  // extra (an object: what the server needs to know who asks for what) to the
  // begin URL, which answers {"publicKey": …} or {error}, and extra with the
  // credential ({"credential": its toJSON form}) to the finish URL, and
  // resolves to what that answers ({error} when refused).
  async function ceremony(kind, beginURL, finishURL, extra) {
    if (!window.PublicKeyCredential || !PublicKeyCredential.parseRequestOptionsFromJSON) {
      return {ok: false, error: "This browser cannot use passkeys here: open the page in your phone's own browser (Telegram's in-app view has no WebAuthn)."};
    }
    const options = await post(beginURL, JSON.stringify(extra || {}));
    if (!options.publicKey) return options.error ? options : {ok: false, error: "no options from the server"};
    let credential;
    try {
      credential = kind === "create"
        ? await navigator.credentials.create({publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options.publicKey)})
        : await navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options.publicKey)});
    } catch (e) {
      return {ok: false, error: "the passkey was not used: " + e.name + (e.message ? ": " + e.message : "")};
    }
    return post(finishURL, JSON.stringify(Object.assign({}, extra || {}, {credential: credential.toJSON()})));
  }
  return {
    enrol: (beginURL, finishURL, extra) => ceremony("create", beginURL, finishURL, extra),
    approve: (beginURL, finishURL, extra) => ceremony("get", beginURL, finishURL, extra),
  };
})();
