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
