// Builds the Grafana panel plugin into dist/: module.js (AMD, what Grafana's
// plugin loader expects) with Grafana's shared packages left out, plus
// plugin.json, README.md and the logo.
// Usage: npm run build:grafana  (OUT_DIR=... to build elsewhere)
//
// esbuild bundles, tree-shakes and minifies (as for the page); rollup only
// turns that one ES module into AMD, which esbuild cannot write.
import { build } from 'esbuild';
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rollup } from 'rollup';

const here = dirname(fileURLToPath(import.meta.url));
const src = resolve(here, 'src/grafana');
const outDir = resolve(process.env.OUT_DIR ?? resolve(here, 'dist'));

/** What Grafana's SystemJS loader gives every plugin: never bundled. */
export const GRAFANA_SHARED = ['@grafana/*', 'react', 'react/*', 'react-dom', 'react-dom/*', 'rxjs', 'rxjs/*', 'lodash', 'lodash/*', '@emotion/*'];

/**
 * `entry` bundled into one AMD module, the imports of `external` left as AMD
 * dependencies. `nodePaths`: where else to look for packages (the browser
 * test's harness lives outside this folder).
 */
export async function bundleAmd({ entry, external, outFile, amdId, minify = true, nodePaths = [] }) {
  const esm = await build({
    entryPoints: [entry],
    nodePaths,
    bundle: true,
    write: false,
    format: 'esm',
    target: ['es2020'],
    minify,
    external,
    legalComments: 'none',
    logLevel: 'warning',
    // UMD code inside the bundle (lodash, moment) must not see the page's AMD `define`
    define: { 'process.env.NODE_ENV': '"production"', define: 'undefined' },
  });
  const code = esm.outputFiles[0].text;
  const virtual = '\0entry';
  const bundle = await rollup({
    input: virtual,
    external: () => true,
    // a bundle that re-exports a whole package names imports it leaves unused
    onwarn: (warning, warn) => (warning.code === 'UNUSED_EXTERNAL_IMPORT' ? undefined : warn(warning)),
    plugins: [{ name: 'esbuild-output', resolveId: (id) => (id === virtual ? id : null), load: (id) => (id === virtual ? code : null) }],
  });
  const { output } = await bundle.write({ file: outFile, format: 'amd', ...(amdId ? { amd: { id: amdId } } : {}) });
  await bundle.close();
  return output[0];
}

async function main() {
  await rm(outDir, { recursive: true, force: true });
  await mkdir(resolve(outDir, 'img'), { recursive: true });
  const out = await bundleAmd({ entry: resolve(src, 'module.ts'), external: GRAFANA_SHARED, outFile: resolve(outDir, 'module.js') });

  const pkg = JSON.parse(await readFile(resolve(here, 'package.json'), 'utf8'));
  const meta = (await readFile(resolve(src, 'plugin.json'), 'utf8'))
    .replace('%VERSION%', pkg.version)
    .replace('%TODAY%', new Date().toISOString().slice(0, 10));
  await writeFile(resolve(outDir, 'plugin.json'), meta);
  await copyFile(resolve(src, 'README.md'), resolve(outDir, 'README.md'));
  await copyFile(resolve(src, 'img/logo.svg'), resolve(outDir, 'img/logo.svg'));

  const kib = (Buffer.byteLength(out.code) / 1024).toFixed(0);
  console.log(`built ${outDir}: module.js ${kib} KiB (AMD; from Grafana: ${out.imports.join(', ')}), plugin.json, README.md, img/logo.svg`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
