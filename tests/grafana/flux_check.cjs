// Checks Flux scripts with InfluxData's own checker (@influxdata/flux-lsp-node,
// the WebAssembly build of flux-lsp): syntax and semantics (unknown functions or
// packages, missing or unexpected arguments, type errors).
//
//   node flux_check.cjs < scripts.json
//   stdin:  [{"name": "...", "script": "..."}, ...]
//   stdout: [{"name": "...", "valid": true|false, "diagnostics": ["line:col message", ...]}, ...]
//
// The verdict is is_valid_flux(); for an invalid script the language server's
// diagnostics say why (they are only the explanation, never the verdict).
'use strict';

const flux = require('@influxdata/flux-lsp-node');

const DIAGNOSTICS_WAIT_MS = 5000;

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/** One language server; each script is opened, its first diagnostics taken, then closed. */
function diagnosticsServer() {
  const server = new flux.Lsp();
  const waiting = new Map(); // uri -> resolve
  server.onMessage((raw) => {
    const msg = JSON.parse(raw);
    if (msg.method !== 'textDocument/publishDiagnostics') return;
    const resolve = waiting.get(msg.params.uri);
    if (resolve && msg.params.diagnostics.length > 0) {
      waiting.delete(msg.params.uri);
      resolve(msg.params.diagnostics);
    }
  });
  server.run().catch(() => {});
  const send = (msg) => server.send(JSON.stringify({ jsonrpc: '2.0', ...msg }));
  let id = 0;
  let ready = null;
  return {
    async explain(script) {
      if (ready === null) {
        ready = send({ id: ++id, method: 'initialize', params: { capabilities: {} } }).then(() =>
          send({ method: 'initialized', params: {} }),
        );
      }
      await ready;
      const uri = `file:///check-${++id}.flux`;
      const got = new Promise((resolve) => {
        waiting.set(uri, resolve);
        setTimeout(() => {
          if (waiting.delete(uri)) resolve([]);
        }, DIAGNOSTICS_WAIT_MS);
      });
      await send({ method: 'textDocument/didOpen', params: { textDocument: { uri, languageId: 'flux', version: 1, text: script } } });
      const diagnostics = await got;
      await send({ method: 'textDocument/didClose', params: { textDocument: { uri } } });
      return diagnostics
        .filter((d) => d.severity === 1)
        .map((d) => `${d.range.start.line + 1}:${d.range.start.character + 1} ${d.message}`);
    },
  };
}

async function main() {
  const scripts = await readStdin();
  let server = null;
  const results = [];
  for (const { name, script } of scripts) {
    const valid = flux.is_valid_flux(script);
    let diagnostics = [];
    if (!valid) {
      server = server ?? diagnosticsServer();
      diagnostics = await server.explain(script);
    }
    results.push({ name, valid, diagnostics });
  }
  process.stdout.write(JSON.stringify(results));
  process.exit(0); // the language server's run() never settles
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + '\n');
  process.exit(2);
});
