// The one script of the service's pages: a guardian's passkey ceremony (docs/pages.md, "A
// guardian with a passkey"). It runs navigator.credentials.create or .get with the options the
// server put on the form, puts the result in the form and sends it. It fetches nothing and
// changes nothing else; without it (or without WebAuthn) the page says what to do instead.
"use strict";
(function () {
  var form = document.getElementById("passkey-form");
  if (!form) return;
  var status = document.getElementById("passkey-status");
  var missing = document.getElementById("passkey-missing");
  if (!window.PublicKeyCredential || !navigator.credentials) {
    missing.hidden = false;
    form.querySelector("button[type=submit]").disabled = true;
    return;
  }
  function bytes(text) {
    var s = text.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    var raw = atob(s);
    var out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out.buffer;
  }
  function text(buffer) {
    var b = new Uint8Array(buffer);
    var s = "";
    for (var i = 0; i < b.length; i++) s += String.fromCharCode(b[i]);
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function publicKey(options) {
    options.challenge = bytes(options.challenge);
    if (options.user) options.user.id = bytes(options.user.id);
    (options.excludeCredentials || []).concat(options.allowCredentials || []).forEach(function (c) {
      c.id = bytes(c.id);
    });
    return options;
  }
  function serialised(credential) {
    var r = credential.response;
    var response = { clientDataJSON: text(r.clientDataJSON) };
    if (r.attestationObject) {
      response.attestationObject = text(r.attestationObject);
      response.transports = r.getTransports ? r.getTransports() : [];
    } else {
      response.authenticatorData = text(r.authenticatorData);
      response.signature = text(r.signature);
      if (r.userHandle) response.userHandle = text(r.userHandle);
    }
    return JSON.stringify({
      id: credential.id,
      rawId: text(credential.rawId),
      type: credential.type,
      response: response,
      clientExtensionResults: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {},
      authenticatorAttachment: credential.authenticatorAttachment || undefined,
    });
  }
  form.addEventListener("submit", function (event) {
    if (form.elements.credential.value) return;
    event.preventDefault();
    var create = form.getAttribute("data-ceremony") === "create";
    var options = { publicKey: publicKey(JSON.parse(form.getAttribute("data-passkey"))) };
    // The words are the page's, in its reader's language (data-say-* on the form).
    var say = function (what) { return form.getAttribute("data-say-" + what); };
    status.textContent = say(create ? "create" : "use");
    (create ? navigator.credentials.create(options) : navigator.credentials.get(options)).then(
      function (credential) {
        form.elements.credential.value = serialised(credential);
        status.textContent = say("sending");
        form.submit();
      },
      function () {
        status.textContent = say(create ? "not-created" : "not-used");
      }
    );
  });
})();
