/**
 * The live-reload snippet a dev session injects before `</body>` of every page (docs/devtool.md;
 * off under `--no-live-reload`).
 *
 * The page opens the control server's reload stream. On `reload` it reloads. On `ready` it reloads
 * only when the server says `refresh` (the browser reconnected with a Last-Event-ID of another
 * session or an older cursor: notices were missed). EventSource reconnects by itself (retry 1 s)
 * and sends the last event id, so a dropped connection or a restarted session at the same address
 * is handled with no code here.
 *
 * Build errors (docs/devtool.md, "Build errors in the page"): `build-error`, or a `ready` whose
 * `error` is set (a page opened while the latest build has failed), shows an overlay: a
 * `role="alert"` panel at the top of the page, in a shadow root so the page's styles do not
 * reach it, naming `file:line` and the message, with a dismiss button. A `ready` without an error
 * removes it, and so does the reload that a good build sends.
 */

/** The overlay's element id (one per page). */
export const OVERLAY_ID = 'devtool-build-error';

const OVERLAY_CSS = [
  ':host{all:initial;position:fixed;z-index:2147483647;top:0;left:0;right:0}',
  'div{max-height:60vh;overflow:auto;box-sizing:border-box;padding:12px 48px 12px 16px;background:#2b0d0e;color:#fde8e8;',
  'font:14px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;border-bottom:3px solid #e5484d}',
  'strong{display:block;color:#ff9592;margin-bottom:4px}',
  'pre{margin:6px 0 0;white-space:pre-wrap;font:inherit}',
  'button{position:absolute;top:8px;right:12px;background:none;border:0;color:inherit;font:20px/1 sans-serif;cursor:pointer}',
].join('');

/** The snippet's script body; `src` is the reload stream's URL as a JSON string literal. */
function script(src: string): string {
  return `(()=>{
if(typeof EventSource==="undefined")return;
const ID=${JSON.stringify(OVERLAY_ID)};
const hide=()=>{const el=document.getElementById(ID);if(el)el.remove()};
const show=(f)=>{
hide();
const host=document.createElement("div");host.id=ID;
const root=host.attachShadow({mode:"open"});
const style=document.createElement("style");style.textContent=${JSON.stringify(OVERLAY_CSS)};
const box=document.createElement("div");box.setAttribute("role","alert");
const title=document.createElement("strong");title.textContent="Build failed"+(f.file?": "+f.file+(f.line?":"+f.line:""):"");
const msg=document.createElement("pre");msg.textContent=f.message;
const close=document.createElement("button");close.type="button";close.textContent="\\u00d7";close.setAttribute("aria-label","Dismiss");close.onclick=hide;
box.append(title,msg,close);root.append(style,box);document.documentElement.append(host);
};
const data=(e)=>{try{return JSON.parse(e.data)}catch{return null}};
const es=new EventSource(${src});
es.addEventListener("ready",(e)=>{const d=data(e);if(!d)return;if(d.refresh){location.reload();return}if(d.error)show(d.error);else hide()});
es.addEventListener("build-error",(e)=>{const d=data(e);if(d)show(d)});
es.addEventListener("reload",()=>{hide();location.reload()});
})();`;
}

/** The `<script>` element injected before `</body>`, reading the reload stream of `controlUrl`. */
export function liveReloadSnippet(controlUrl: string): string {
  return `<script data-devtool-live-reload>${script(JSON.stringify(`${controlUrl}/_devtool/reload`))}</script>\n`;
}
