import type { Api } from "./api";
import type { Route } from "./route";

/** What a screen gets when it is shown. */
export interface ViewContext {
  api: Api;
  route: Route;
}

/** A shown screen: how to take it down, and how to follow a new route without a remount. */
export interface Mounted {
  unmount?: () => void;
  update?: (route: Route) => void;
}

/** A screen that reads `load` now and every `ms` while the window is shown;
 * its `unmount` stops the reads and calls `stop` (the screen's own flag
 * that it is gone, for reads already out). */
export function refreshing(load: () => Promise<void>, ms: number, stop: () => void): Mounted {
  const timer = window.setInterval(() => {
    if (document.visibilityState === "visible") void load();
  }, ms);
  void load();
  return {
    unmount() {
      stop();
      window.clearInterval(timer);
    },
  };
}
