// The upload page sends its file as a resumable upload (/api/uploads/, README "Upload
// size"): in chunks appended at the offset the server holds, with a progress bar. A chunk
// that fails (the connection dropped, the server restarting) is retried after a pause that
// doubles up to 30 s, from the offset the server then reports; the browser going back
// online retries at once. The session's id is kept in localStorage under the file's name,
// size and last change, so that after a reload, picking the same file again resumes it.
// Without JavaScript the form posts the whole file, as before.
(function () {
  "use strict";
  const form = document.querySelector("form[data-resumable]");
  if (!form || !window.fetch || !window.localStorage || !window.Blob) {
    return;
  }
  const OCTET = "application/offset+octet-stream";
  const MAX_PAUSE = 30000;
  const MAX_FAILURES = 12; // about four minutes of retries in a row, then it pauses
  const api = form.getAttribute("data-api");
  const importUrl = form.getAttribute("data-import-url"); // ends in /0/
  const csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;
  const button = form.querySelector("button[type=submit]");
  const box = document.getElementById("upload-progress");
  const bar = document.getElementById("upload-bar");
  const status = document.getElementById("upload-status");
  // the API's fields that the page shows on its file field
  const ON_FILE = {file_name: "file", size: "file", sha256: "file"};

  function storageKey(file) {
    return "concordia-upload:" + [file.name, file.size, file.lastModified].join(":");
  }
  function headers(extra) {
    return Object.assign({"X-CSRFToken": csrf, "Accept": "application/json"}, extra || {});
  }
  function sessionUrl(session) {
    return api + session.id + "/";
  }
  function jobUrl(id) {
    return importUrl.replace(/\/0\/$/, "/" + id + "/");
  }
  function say(text) {
    status.textContent = text;
  }
  function mebibytes(bytes) {
    return (bytes / 1048576).toFixed(1) + " MiB";
  }
  function showProgress(offset, size) {
    bar.max = size;
    bar.value = offset;
    const percent = size ? Math.floor((100 * offset) / size) : 100;
    bar.setAttribute("data-offset", String(offset));
    say(mebibytes(offset) + " of " + mebibytes(size) + " sent (" + percent + "%)");
  }
  // Wait ``ms``, or less if the browser comes back online.
  function pause(ms) {
    return new Promise(function (resolve) {
      function done() {
        window.clearTimeout(timer);
        window.removeEventListener("online", done);
        resolve();
      }
      const timer = window.setTimeout(done, ms);
      window.addEventListener("online", done);
    });
  }
  function transient(response) {
    return response === null || response.status === 423 || response.status === 429 ||
      (response.status >= 500 && response.status !== 507);
  }
  async function json(response) {
    try {
      return await response.json();
    } catch (error) {
      return {detail: response.status + " " + response.statusText, errors: {}};
    }
  }
  async function send(url, options) {
    try {
      return await window.fetch(url, Object.assign({credentials: "same-origin", cache: "no-store"}, options));
    } catch (error) {
      return null; // the network failed: no answer at all
    }
  }
  // ``attempt`` (an async function answering a Response or null) until it is not a
  // transient failure; waits longer after each failure, at most MAX_FAILURES in a row.
  async function retried(attempt, what) {
    for (let failures = 1; ; failures++) {
      const response = await attempt();
      if (!transient(response)) {
        return response;
      }
      if (failures >= MAX_FAILURES) {
        throw new Error(what + ": no answer from the server. Press the button again to resume.");
      }
      const wait = Math.min(MAX_PAUSE, 500 * Math.pow(2, failures - 1));
      say("The connection failed (" + what + "); trying again in " + Math.ceil(wait / 1000) + " s…");
      box.setAttribute("data-state", "retrying");
      await pause(wait);
      box.setAttribute("data-state", "sending");
    }
  }

  function clearErrors() {
    form.querySelectorAll(".from-upload").forEach(function (element) { element.remove(); });
    form.querySelectorAll(".field.has-error").forEach(function (field) {
      field.classList.remove("has-error");
    });
  }
  function showErrors(body) {
    const errors = body.errors || {};
    let shown = false;
    Object.keys(errors).forEach(function (name) {
      const input = form.querySelector("[name=" + (ON_FILE[name] || name) + "]");
      const field = input ? input.closest(".field") : null;
      (errors[name] || []).forEach(function (message) {
        const line = document.createElement("p");
        line.className = "error from-upload";
        line.textContent = message;
        (field || form).appendChild(line);
        shown = true;
      });
      if (field) {
        field.classList.add("has-error");
      }
    });
    if (!shown) {
      const line = document.createElement("p");
      line.className = "error from-upload";
      line.textContent = body.detail || "The upload was refused.";
      form.prepend(line);
    }
  }

  function options(file) {
    const data = new FormData(form);
    return {
      file_name: file.name,
      size: file.size,
      dataset: String(data.get("dataset") || ""),
      task: String(data.get("task") || ""),
      create_aspects: data.get("create_aspects") !== null,
      widen_aspects: data.get("widen_aspects") !== null,
      rescale: String(data.get("rescale") || ""),
      format: String(data.get("format") || "concordia"),
    };
  }

  // The session this file was being sent in before (a reload, a closed tab), if the
  // server still has it for the same dataset and task.
  async function earlier(file, wanted) {
    const id = window.localStorage.getItem(storageKey(file));
    if (!id) {
      return null;
    }
    const response = await retried(function () {
      return send(api + id + "/", {headers: headers()});
    }, "asking for the earlier upload");
    if (response.ok) {
      const session = await response.json();
      if (session.size === file.size && session.dataset === wanted.dataset &&
          session.task === wanted.task) {
        return session;
      }
      if (!session.job) {
        await send(sessionUrl(session), {method: "DELETE", headers: headers()});
      }
    }
    window.localStorage.removeItem(storageKey(file));
    return null;
  }

  async function start(file, wanted) {
    const response = await retried(function () {
      return send(api, {
        method: "POST",
        headers: headers({"Content-Type": "application/json"}),
        body: JSON.stringify(wanted),
      });
    }, "starting the upload");
    const body = await json(response);
    if (!response.ok) {
      showErrors(body);
      return null;
    }
    window.localStorage.setItem(storageKey(file), body.id);
    return body;
  }

  // Chunks aim at CHUNK_SECONDS each on the connection as measured (a slow uplink sends
  // smaller ones, so that none outlasts the server's request timeout), and halve after a
  // failure; between a quarter MiB (or the server's limit, if lower) and the server's limit.
  const CHUNK_SECONDS = 10;
  async function sendChunks(file, session) {
    const smallest = Math.min(262144, session.chunk_max);
    let offset = session.offset;
    let size = session.chunk_max;
    showProgress(offset, file.size);
    while (offset < file.size) {
      const from = offset;
      const started = Date.now();
      const response = await retried(async function () {
        const answer = await send(sessionUrl(session), {
          method: "PATCH",
          headers: headers({"Content-Type": OCTET, "Upload-Offset": String(from)}),
          body: file.slice(from, Math.min(file.size, from + size)),
        });
        if (transient(answer)) {
          size = Math.max(smallest, Math.floor(size / 2));
          // the chunk may have arrived in part: the next attempt starts where the server is
          const asked = await send(sessionUrl(session), {headers: headers()});
          if (asked !== null && asked.ok) {
            offset = (await asked.json()).offset;
            if (offset !== from) {
              return asked; // not transient: go on from the server's offset
            }
          }
        }
        return answer;
      }, "sending byte " + from.toLocaleString());
      if (response.status === 204) {
        offset = Number(response.headers.get("Upload-Offset"));
        const rate = (offset - from) / Math.max(0.001, (Date.now() - started) / 1000);
        size = Math.max(smallest, Math.min(session.chunk_max, Math.floor(rate * CHUNK_SECONDS)));
      } else if (response.status === 409) {
        const body = await json(response);
        if (typeof body.offset !== "number") {
          throw new Error(body.detail);
        }
        offset = body.offset;
      } else if (!response.ok) {
        throw new Error((await json(response)).detail);
      }
      showProgress(offset, file.size);
    }
  }

  async function complete(session) {
    say("All " + mebibytes(session.size) + " sent; starting the import…");
    const response = await retried(function () {
      return send(sessionUrl(session) + "complete/", {method: "POST", headers: headers()});
    }, "completing the upload");
    const body = await json(response);
    if (!response.ok) {
      throw new Error(body.detail);
    }
    return body;
  }

  async function upload(file) {
    const wanted = options(file);
    box.hidden = false;
    box.setAttribute("data-state", "starting");
    say("Starting the upload of " + file.name + "…");
    let session = await earlier(file, wanted);
    if (session === null) {
      session = await start(file, wanted);
      if (session === null) {
        box.hidden = true;
        return false;
      }
    }
    box.setAttribute("data-state", "sending");
    box.setAttribute("data-session", session.id);
    let job = session.job;
    if (!job) {
      await sendChunks(file, session);
      job = (await complete(session)).id;
    }
    window.localStorage.removeItem(storageKey(file));
    box.setAttribute("data-state", "complete");
    window.location.assign(jobUrl(job));
    return true;
  }

  form.addEventListener("submit", function (event) {
    const input = form.querySelector("input[type=file][name=file]");
    const file = input && input.files && input.files[0];
    if (!file) {
      return; // the form posts; the page says the file is missing
    }
    event.preventDefault();
    clearErrors();
    button.disabled = true;
    upload(file).then(function (done) {
      button.disabled = done;
    }).catch(function (error) {
      box.setAttribute("data-state", "stopped");
      say("The upload stopped: " + error.message);
      button.disabled = false;
    });
  });
})();
