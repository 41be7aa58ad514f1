// Channel discovery: a running gateway's /v1/feeds/:name names each channel's
// multicast groups, so a subscriber needs only the control plane's URL and a
// token (qpgate subscribe and record use it; so can any program).
import { ClientError, getJson, type ClientOptions } from '../client/control-client.js';
import type { SubscriberChannelConfig } from './subscriber.js';

interface FeedChannelView {
  id: number;
  groupA: string;
  groupB?: string | null;
}

/**
 * The channels of the gateway's feed `feed` (`wanted` ids, or all when empty)
 * as subscribe()'s channel configs. The token is `opts.token`, else
 * $QPGATE_TOKEN, else <state.dir>/admin.token; errors are ClientErrors.
 */
export async function discoverChannels(opts: ClientOptions, feed = 'default', wanted: readonly number[] = []): Promise<SubscriberChannelConfig[]> {
  const view = await getJson<{ channels: FeedChannelView[] }>(opts, `/v1/feeds/${encodeURIComponent(feed)}`);
  const all = view.channels;
  for (const id of wanted) {
    if (!all.some((c) => c.id === id)) throw new ClientError(`feed "${feed}" has no channel ${id} (it has ${all.map((c) => c.id).join(', ') || 'none'})`);
  }
  return all
    .filter((c) => wanted.length === 0 || wanted.includes(c.id))
    .map((c) => ({ id: c.id, groupA: c.groupA, ...(c.groupB ? { groupB: c.groupB } : {}) }));
}
