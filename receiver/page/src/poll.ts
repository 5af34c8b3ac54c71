// Runs `load` every `ms` while the page is visible, at once when it becomes
// visible again, and when asked (`now()`); never two at a time.

export interface Poller {
  now: () => void;
  stop: () => void;
}

export function poll(load: () => Promise<void>, ms: number): Poller {
  let timer: number | undefined;
  let running = false;
  let again = false;
  let stopped = false;

  async function run(): Promise<void> {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    window.clearTimeout(timer);
    running = true;
    try {
      await load();
    } catch {
      // `load` shows its own errors
    }
    running = false;
    if (stopped) return;
    if (again) {
      again = false;
      void run();
      return;
    }
    if (document.visibilityState !== "hidden") timer = window.setTimeout(() => void run(), ms);
  }

  function onVisible(): void {
    if (document.visibilityState === "visible") void run();
    else window.clearTimeout(timer);
  }

  document.addEventListener("visibilitychange", onVisible);
  void run();
  return {
    now: () => void run(),
    stop: () => {
      stopped = true;
      window.clearTimeout(timer);
      document.removeEventListener("visibilitychange", onVisible);
    },
  };
}
