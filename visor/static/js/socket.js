// The page's single websocket to the visor, with automatic reconnection.
//
// Each page says what it wants in `onOpen` (subscribe to the lobby, watch an id...), which is
// called again after every reconnection, so a restarted server or a dropped Wi-Fi link heals
// itself without a reload.

const RETRY_MIN_MS = 500;
const RETRY_MAX_MS = 8000;

export function socketUrl() {
  const scheme = location.protocol === "https:" ? "wss://" : "ws://";
  return scheme + location.host + "/ws";
}

export class VisorSocket {
  /**
   * @param {object} handlers onOpen(socket, reconnected), onMessage(message),
   *   onStatus("connecting" | "open" | "closed"), reconnect (default true)
   */
  constructor({ onOpen, onMessage, onStatus, reconnect = true }) {
    this.onOpen = onOpen || (() => {});
    this.onMessage = onMessage;
    this.onStatus = onStatus || (() => {});
    this.reconnect = reconnect;
    this.retryMs = RETRY_MIN_MS;
    this.opened = false;
    this.ws = null;
    this.connect();
  }

  connect() {
    this.onStatus("connecting");
    const ws = new WebSocket(socketUrl());
    this.ws = ws;
    ws.addEventListener("open", () => {
      this.retryMs = RETRY_MIN_MS;
      this.onStatus("open");
      const reconnected = this.opened;
      this.opened = true;
      this.onOpen(this, reconnected);
    });
    ws.addEventListener("message", (event) => {
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return; // the server only sends JSON; ignore anything else rather than crash
      }
      if (message && typeof message.type === "string") this.onMessage(message);
    });
    ws.addEventListener("close", () => {
      this.onStatus("closed");
      if (!this.reconnect) return;
      setTimeout(() => this.connect(), this.retryMs);
      this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
    });
  }

  /** Send a message; returns false when the socket is not open (the caller shows why). */
  send(message) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  }

  get isOpen() {
    return Boolean(this.ws && this.ws.readyState === WebSocket.OPEN);
  }
}

/** Show the connection state in a small status element (#connection on every page). */
export function connectionIndicator(node) {
  const labels = { connecting: "connecting…", open: "live", closed: "reconnecting…" };
  return (status) => {
    node.textContent = labels[status] || status;
    node.dataset.status = status;
  };
}
