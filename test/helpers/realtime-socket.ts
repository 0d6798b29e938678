/**
 * A WebSocket client of svc's realtime endpoint for end-to-end tests (docs/realtime.md): opens
 * `GET /api/realtime`, collects every JSON frame, and waits for a frame matching a predicate.
 */
import WebSocket from 'ws';

/** An open realtime socket, the frames received so far, and a wait for one of them. */
export interface RealtimeSocket {
  ws: WebSocket;
  frames: any[];
  /** The first frame (received so far or within 5 s) for which `pred` holds. @throws Error listing the frames when none comes */
  waitFor(pred: (f: any) => boolean): Promise<any>;
}

/** Opens a realtime WebSocket to the server at `url` (http://…). */
export async function openRealtime(url: string): Promise<RealtimeSocket> {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/api/realtime`);
  const frames: any[] = [];
  ws.on('message', (d) => frames.push(JSON.parse(d.toString())));
  await new Promise<void>((res, rej) => {
    ws.once('open', () => res());
    ws.once('error', rej);
  });
  const waitFor = async (pred: (f: any) => boolean): Promise<any> => {
    for (let i = 0; i < 100; i++) {
      const hit = frames.find(pred);
      if (hit) return hit;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no such frame; frames: ${JSON.stringify(frames)}`);
  };
  return { ws, frames, waitFor };
}
