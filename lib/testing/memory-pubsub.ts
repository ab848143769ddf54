import { later } from '../core/later.js';
import type { EventEmitter } from 'node:events';

/** What Redis answers a subscribed connection that sends anything but the pub/sub commands. */
export const SUBSCRIBED_CONTEXT_ERROR =
  "ERR Can't execute this command: only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context";

/** A connection a PUBLISH may reach. */
export interface Receiver {
  /** True when the connection takes the message (it is subscribed to the channel, and up). */
  deliver(channel: string, message: string): boolean;
}

/** PUBLISH on one server: offers the message to every connection; returns how many took it. */
export function publish(receivers: Iterable<Receiver>, channel: string, message: string): number {
  let taken = 0;
  for (const receiver of receivers) if (receiver.deliver(channel, message)) taken++;
  return taken;
}

/**
 * The channels one connection is subscribed to, and the 'message' events for
 * them: emitted a microtask after the PUBLISH (a reply on the socket comes
 * later than the command's own), and only if still subscribed by then.
 */
export class Subscriptions {
  private readonly channels = new Set<string>();

  constructor(private readonly emitter: EventEmitter) {}

  /** How many channels, as SUBSCRIBE and UNSUBSCRIBE answer. */
  get count(): number {
    return this.channels.size;
  }

  add(channels: readonly string[]): void {
    for (const channel of channels) this.channels.add(channel);
  }

  /** Leaves the channels named, or every channel when none is. */
  remove(channels: readonly string[]): void {
    if (channels.length === 0) this.channels.clear();
    for (const channel of channels) this.channels.delete(channel);
  }

  clear(): void {
    this.channels.clear();
  }

  /** True when subscribed to `channel`; the 'message' event follows. */
  deliver(channel: string, message: string): boolean {
    if (!this.channels.has(channel)) return false;
    later(() => {
      if (this.channels.has(channel)) this.emitter.emit('message', channel, message);
    });
    return true;
  }
}
