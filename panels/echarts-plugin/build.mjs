// Builds the page into the bridge's static directory: index.html + assets/app.{js,css}, assets/early.js,
// assets/echarts.js (ECharts, loaded by app.js: src/page/echartsLoader.ts) and the chunks they share.
// Usage: npm run build  (OUT_DIR=... to build elsewhere)
import { build } from 'esbuild';
import { copyFile, mkdir, rm } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = resolve(process.env.OUT_DIR ?? resolve(here, '../../bridge/src/curvestream_bridge/static'));

await rm(outDir, { recursive: true, force: true });
await mkdir(resolve(outDir, 'assets'), { recursive: true });

const common = {
  outdir: resolve(outDir, 'assets'),
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  minify: true,
  sourcemap: false,
  legalComments: 'linked',
  metafile: true,
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
};
const results = [
  // echarts: its own entry (a stable name), imported by app.js when its first chart is made (src/page/echartsLoader.ts)
  await build({
    ...common,
    entryPoints: { app: resolve(here, 'src/page/main.ts'), echarts: resolve(here, 'src/page/echarts.ts') },
    splitting: true,
    chunkNames: 'chunk-[hash]',
  }),
  // early: the runs and metrics asked for while app.js loads (src/page/early.ts), whole in one file so that it
  // runs as soon as it arrives, not after chunks it would share with app.js
  await build({ ...common, entryPoints: { early: resolve(here, 'src/page/early.ts') } }),
];
await copyFile(resolve(here, 'src/page/index.html'), resolve(outDir, 'index.html'));

const sizes = results
  .flatMap((result) => Object.entries(result.metafile.outputs))
  .map(([file, info]) => `${file.replace(/^.*static\//, '')} ${(info.bytes / 1024).toFixed(0)} KiB`)
  .join(', ');
console.log(`built ${outDir}: index.html, ${sizes}`);
