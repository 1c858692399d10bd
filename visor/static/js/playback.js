// Playback of a live game: tweens from one position to the next, never more than one turn
// behind. When a turn arrives while the previous one is still moving, the previous one is
// finished at once and the new one starts from there, so a fast game is shown at its real
// pace (with shorter or no tweens) instead of piling up a backlog, as the original did.
//
// Tweens also shorten themselves to the pace turns arrive at, so that in a fast game each
// move is still seen whole rather than cut off by the next one.
//
// Pausing freezes the view; turns that arrive meanwhile are kept (only the latest matters)
// and resuming jumps straight to it.
//
// The replay page uses it too, with show() for jumps and advance(frame, tweenMs) for steps.

const MAX_PENDING = 300;

export class Playback {
  /**
   * @param {(from: object, to: object, t: number) => void} render draws a frame; `from` and
   *   `to` are the positions (whatever the view understands), `t` goes from 0 to 1.
   * @param {(frame: object) => void} onShown called once when a frame becomes the one shown
   *   (the page updates scores and the log then, so they match the board).
   */
  constructor(render, onShown) {
    this.render = render;
    this.onShown = onShown || (() => {});
    this.durationMs = 300; // the speed control: the longest a tween may take
    this.tweenMs = 300; // this tween's length, shortened to the game's pace
    this.lastArrival = null;
    this.gapMs = null; // smoothed time between turns
    this.from = null;
    this.to = null;
    this.started = 0;
    this.progress = 1;
    this.paused = false;
    this.pending = []; // frames that arrived while paused, oldest first
    this.request = 0;
  }

  /** Show a frame at once (a snapshot, a jump after pausing). */
  show(frame) {
    if (this.paused && this.to !== null) {
      this.pending = [frame]; // a snapshot replaces whatever was waiting
      return;
    }
    this.cancel();
    this.from = frame;
    this.to = frame;
    this.progress = 1;
    this.onShown(frame);
    this.draw();
  }

  /**
   * A new turn: tween to it, after finishing any tween still running. A replay, which knows
   * its own pace, gives the tween's length (`tweenMs`); a live game's is measured.
   */
  advance(frame, tweenMs) {
    if (tweenMs === undefined) this.measurePace();
    if (this.paused) {
      this.pending.push(frame);
      if (this.pending.length > MAX_PENDING) this.pending.shift(); // only the log misses them
      return;
    }
    this.tweenMs =
      tweenMs !== undefined
        ? tweenMs
        : Math.min(this.durationMs, this.gapMs === null ? this.durationMs : this.gapMs * 0.85);
    if (this.to === null || this.tweenMs < 20) {
      this.show(frame);
      return;
    }
    this.cancel();
    this.from = this.to; // the running tween ends here, at its target
    this.to = frame;
    this.progress = 0;
    this.started = performance.now();
    this.onShown(frame);
    this.tick();
  }

  tick() {
    const elapsed = performance.now() - this.started;
    this.progress = Math.min(1, elapsed / Math.max(1, this.tweenMs));
    this.draw();
    if (this.progress < 1) this.request = requestAnimationFrame(() => this.tick());
    else this.request = 0;
  }

  measurePace() {
    const now = performance.now();
    if (this.lastArrival !== null) {
      const gap = Math.min(now - this.lastArrival, 5000);
      this.gapMs = this.gapMs === null ? gap : 0.6 * this.gapMs + 0.4 * gap;
    }
    this.lastArrival = now;
  }

  cancel() {
    if (this.request) cancelAnimationFrame(this.request);
    this.request = 0;
  }

  /** Draw the current frame again (after a resize or an overlay change). */
  draw() {
    if (this.to !== null) this.render(this.from, this.to, this.progress);
  }

  get animating() {
    return this.request !== 0;
  }

  pause() {
    this.paused = true;
    // Freeze on the turn being shown, not halfway through its tween.
    if (this.animating) {
      this.cancel();
      this.progress = 1;
      this.draw();
    }
  }

  /** Resume, jumping to the latest frame (frames skipped on the way still reach onShown). */
  resume() {
    this.paused = false;
    const skipped = this.pending;
    this.pending = [];
    if (!skipped.length) return;
    for (const frame of skipped.slice(0, -1)) this.onShown(frame);
    this.show(skipped[skipped.length - 1]);
  }
}
