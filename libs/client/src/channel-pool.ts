import { Channel, type ChannelCredentials, type ChannelInterface, type ChannelOptions } from "@grpc/grpc-js";

/**
 * One channel per distinct address, shared by every service client aimed at it (an all-in-one
 * process serves SessionEvents, PromptAssembly and CacheMonitor on one port: one HTTP/2 connection).
 * The channels use a subchannel pool of their own, not grpc-js's process-wide one, so the reuse is
 * this client's doing and close() really closes the connections it opened.
 */
export class ChannelPool {
  private readonly channels = new Map<string, ChannelInterface>();
  private readonly options: ChannelOptions;

  constructor(
    private readonly credentials: ChannelCredentials,
    options: ChannelOptions = {},
  ) {
    this.options = { "grpc.use_local_subchannel_pool": 1, ...options };
  }

  channelFor(address: string): ChannelInterface {
    let channel = this.channels.get(address);
    if (channel === undefined) {
      channel = new Channel(address, this.credentials, this.options);
      this.channels.set(address, channel);
    }
    return channel;
  }

  get size(): number {
    return this.channels.size;
  }

  close(): void {
    for (const channel of this.channels.values()) channel.close();
    this.channels.clear();
  }
}
