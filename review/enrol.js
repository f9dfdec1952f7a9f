// The enrolment page: the one-time token is in the address's fragment
// (#t=TOKEN), never sent to a server but in the calls below.
"use strict";
(function () {
  const token = new URLSearchParams(location.hash.slice(1)).get("t") || "";
  const status = document.getElementById("status");
  const button = document.getElementById("enrol");
  function say(text, refused) { status.textContent = text; status.className = refused ? "refused" : ""; }
  if (!token) { say("This page was not opened from an enrolment link.", true); button.disabled = true; return; }
  button.onclick = async () => {
    button.disabled = true;
    say("Making the passkey…");
    const a = await countersignPasskey.enrol("../api/passkey/enrol/begin", "../api/passkey/enrol/finish", { token: token });
    if (a.error) { say(a.error, true); button.disabled = false; return; }
    say(a.said || "Enrolled.");
    document.body.dataset.enrolled = "yes";
  };
})();
