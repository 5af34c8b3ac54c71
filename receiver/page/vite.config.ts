import { defineConfig, loadEnv } from "vite";

// The receiver (`sessionpipe-receiver`) serves dist/ itself: index.html at `/`
// (and at `/pair/<code>`), the bundle under `/assets/`, `sw.js` and the
// manifest at the root. Absolute paths, so `/pair/<code>` finds its assets.
//
// `SESSIONPIPE_RECEIVER=http://localhost:8787 npm run dev` passes the API
// through to a running receiver (passkeys still need the receiver's rp id).
export default defineConfig(({ mode }) => {
  const receiver = loadEnv(mode, ".", "SESSIONPIPE_")["SESSIONPIPE_RECEIVER"];
  return {
    base: "/",
    clearScreen: false,
    build: {
      outDir: "dist",
      assetsDir: "assets",
      emptyOutDir: true,
      target: "es2022",
      // One entry, no dynamic imports: the preload helper is dead weight.
      modulePreload: { polyfill: false },
      sourcemap: false,
    },
    ...(receiver ? { server: { proxy: { "/app/api": { target: receiver } } } } : {}),
  };
});
