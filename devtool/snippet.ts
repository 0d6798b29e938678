/**
 * The live-reload snippet a dev session injects before `</body>` of every page (docs/devtool.md;
 * off under `--no-live-reload`).
 *
 * The page opens the control server's reload stream. On `reload` it reloads. On `ready` it reloads
 * only when the server says `refresh` (the browser reconnected with a Last-Event-ID of another
 * session or an older cursor: notices were missed). EventSource reconnects by itself (retry 1 s)
 * and sends the last event id, so a dropped connection or a restarted session at the same address
 * is handled with no code here.
 */
export function liveReloadSnippet(controlUrl: string): string {
  const src = JSON.stringify(`${controlUrl}/_devtool/reload`);
  return `<script data-devtool-live-reload>(()=>{if(typeof EventSource==="undefined")return;const es=new EventSource(${src});es.addEventListener("ready",(e)=>{try{if(JSON.parse(e.data).refresh)location.reload()}catch{}});es.addEventListener("reload",()=>location.reload());})();</script>\n`;
}
