import { defineConfig } from "vite";

// The Tauri shell (src-tauri/) embeds ui/dist as static files: relative asset
// paths, no dev server needed.
export default defineConfig({
  base: "./",
  clearScreen: false,
  build: {
    outDir: "dist",
    emptyOutDir: true,
  },
});
