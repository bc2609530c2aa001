// Builds what Grafana would give the panel, for the browser test's harness page:
//   vendor/require.js         the AMD loader (requirejs)
//   vendor/react.js, vendor/react-dom.js   React 18's UMD builds
//   vendor/react-jsx-runtime.js   React's own jsx runtime (CommonJS) in an AMD wrapper: React 18 has no UMD of it
//   vendor/grafana-data.js    the real @grafana/data, bundled as one AMD module (React left out)
// Usage (from anywhere): node tests/browser/grafana_harness/build_vendor.mjs OUT_DIR
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const pluginDir = resolve(here, '../../../panels/echarts-plugin');
const outDir = resolve(process.argv[2] ?? 'vendor');
const { bundleAmd } = await import(resolve(pluginDir, 'build-grafana.mjs'));
const requireFromPlugin = createRequire(resolve(pluginDir, 'package.json'));

await mkdir(outDir, { recursive: true });
const entry = resolve(outDir, 'grafana-data.entry.js');
await writeFile(entry, "export * from '@grafana/data';\n");
await bundleAmd({
  entry,
  external: ['react', 'react-dom'],
  outFile: resolve(outDir, 'grafana-data.js'),
  minify: false,
  nodePaths: [resolve(pluginDir, 'node_modules')],
});
const packageDir = (name) => dirname(requireFromPlugin.resolve(`${name}/package.json`));
const copies = {
  'require.js': ['requirejs', 'require.js'],
  'react.js': ['react', 'umd/react.production.min.js'],
  'react-dom.js': ['react-dom', 'umd/react-dom.production.min.js'],
};
for (const [name, [pkg, file]] of Object.entries(copies)) await copyFile(resolve(packageDir(pkg), file), resolve(outDir, name));
const jsxRuntime = await readFile(resolve(packageDir('react'), 'cjs/react-jsx-runtime.production.min.js'), 'utf8');
await writeFile(
  resolve(outDir, 'react-jsx-runtime.js'),
  `define(['require', 'exports', 'module', 'react'], function (require, exports, module) {\n${jsxRuntime}\n});\n`,
);
console.log(`harness vendor files in ${outDir}`);
