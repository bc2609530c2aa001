import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    environment: 'node',
    watch: false,
    // @grafana/data's ESM build imports CommonJS packages by named export (moment-timezone):
    // Node's own loader refuses that, Vite's transform handles it.
    server: { deps: { inline: [/@grafana\//] } },
  },
});
