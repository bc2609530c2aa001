import { TIMING } from '../constants/defaults';
import type { LiveMessage, LiveSubscription } from '../types/api';
import { backoffDelayMs } from './backoff';

export type LiveState = 'connecting' | 'open' | 'offline';

export interface LiveHandlers {
  onMessage(message: LiveMessage): void;
  /** `reconnected`: the socket was open before, so pushes may have been missed. */
  onState(state: LiveState, reconnected: boolean): void;
}

/** The live WebSocket: sends the full subscription on every (re)connect, reconnects with backoff. */
export class LiveSocket {
  private socket: WebSocket | null = null;
  private subscriptions: LiveSubscription[] = [];
  private attempt = 0;
  private everOpened = false;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  state: LiveState = 'offline';

  constructor(
    private readonly url: () => string,
    private readonly handlers: LiveHandlers,
  ) {}

  start(): void {
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.socket?.close();
    this.socket = null;
  }

  setSubscriptions(subscriptions: LiveSubscription[]): void {
    this.subscriptions = subscriptions;
    this.send();
  }

  private send(): void {
    if (this.socket?.readyState === WebSocket.OPEN) {
      this.socket.send(JSON.stringify({ subscribe: this.subscriptions }));
    }
  }

  private setState(state: LiveState, reconnected = false): void {
    this.state = state;
    this.handlers.onState(state, reconnected);
  }

  private connect(): void {
    if (this.stopped) return;
    this.setState('connecting');
    let socket: WebSocket;
    try {
      socket = new WebSocket(this.url());
    } catch {
      this.retry();
      return;
    }
    this.socket = socket;
    socket.onopen = () => {
      const reconnected = this.everOpened;
      this.everOpened = true;
      this.attempt = 0;
      this.send();
      this.setState('open', reconnected);
    };
    socket.onmessage = (event) => {
      if (typeof event.data !== 'string') return;
      let message: unknown;
      try {
        message = JSON.parse(event.data);
      } catch {
        return;
      }
      if (message && typeof message === 'object' && typeof (message as { type?: unknown }).type === 'string') {
        this.handlers.onMessage(message as LiveMessage);
      }
    };
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.retry();
    };
    socket.onerror = () => socket.close();
  }

  private retry(): void {
    if (this.stopped) return;
    this.setState('offline');
    const delay = backoffDelayMs(this.attempt++, TIMING.reconnectMinMs, TIMING.reconnectMaxMs);
    this.timer = setTimeout(() => this.connect(), delay);
  }
}
