/** Small accessible building blocks: labelled inputs with their errors, dialogs, confirmations. */
import type { ComponentChildren, InputHTMLAttributes, LooseInputHTMLAttributes, TextareaHTMLAttributes } from 'preact';
import { useEffect, useId, useRef, useState } from 'preact/hooks';
import { api, errorMessage } from '../api';

interface FieldShell {
  label: ComponentChildren;
  error?: string | null;
  hint?: ComponentChildren;
  class?: string;
}

/** Label, control, hint and error, wired with for/id and aria-describedby. */
function Shell(props: FieldShell & { id: string; children: ComponentChildren }) {
  return (
    <div class={`field ${props.class ?? ''} ${props.error ? 'has-error' : ''}`}>
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint && <div class="hint" id={`${props.id}-hint`}>{props.hint}</div>}
      {props.error && <div class="error-text" id={`${props.id}-err`}>{props.error}</div>}
    </div>
  );
}

const describedBy = (id: string, p: FieldShell) => [p.hint ? `${id}-hint` : '', p.error ? `${id}-err` : ''].filter(Boolean).join(' ') || undefined;

type InputProps = FieldShell & Omit<LooseInputHTMLAttributes<HTMLInputElement>, 'label' | 'class' | 'value' | 'onInput'> & {
  value: string;
  onValue(v: string): void;
};

export function TextInput({ label, error, hint, class: cls, value, onValue, ...rest }: InputProps) {
  const auto = useId();
  const id = (rest.id as string | undefined) ?? auto;
  return (
    <Shell id={id} label={label} error={error} hint={hint} class={cls}>
      <input {...(rest as InputHTMLAttributes<HTMLInputElement>)} id={id} value={value} onInput={(e) => onValue(e.currentTarget.value)} aria-invalid={error ? 'true' : undefined} aria-describedby={describedBy(id, { label, error, hint })} />
    </Shell>
  );
}

type AreaProps = FieldShell & Omit<TextareaHTMLAttributes<HTMLTextAreaElement>, 'label' | 'class' | 'value' | 'onInput'> & {
  value: string;
  onValue(v: string): void;
};

export function TextArea({ label, error, hint, class: cls, value, onValue, ...rest }: AreaProps) {
  const auto = useId();
  const id = (rest.id as string | undefined) ?? auto;
  return (
    <Shell id={id} label={label} error={error} hint={hint} class={cls}>
      <textarea {...rest} id={id} value={value} onInput={(e) => onValue(e.currentTarget.value)} aria-invalid={error ? 'true' : undefined} aria-describedby={describedBy(id, { label, error, hint })} />
    </Shell>
  );
}

interface SelectProps extends FieldShell {
  value: string;
  onValue(v: string): void;
  options: Array<{ value: string; label: string }>;
  disabled?: boolean;
  id?: string;
}

export function Select({ label, error, hint, class: cls, value, onValue, options, disabled, id: given }: SelectProps) {
  const auto = useId();
  const id = given ?? auto;
  return (
    <Shell id={id} label={label} error={error} hint={hint} class={cls}>
      <select id={id} value={value} disabled={disabled} onChange={(e) => onValue(e.currentTarget.value)} aria-invalid={error ? 'true' : undefined} aria-describedby={describedBy(id, { label, error, hint })}>
        {options.map((o) => (
          <option key={o.value} value={o.value}>{o.label}</option>
        ))}
      </select>
    </Shell>
  );
}

interface CheckProps {
  label: ComponentChildren;
  checked: boolean;
  onValue(v: boolean): void;
  hint?: string;
  error?: string | null;
  disabled?: boolean;
}

export function Checkbox({ label, checked, onValue, hint, error, disabled }: CheckProps) {
  const id = useId();
  return (
    <div class={`check ${error ? 'has-error' : ''}`}>
      <input type="checkbox" id={id} checked={checked} disabled={disabled} onChange={(e) => onValue(e.currentTarget.checked)} aria-describedby={error ? `${id}-err` : hint ? `${id}-hint` : undefined} />
      <label for={id}>{label}</label>
      {hint && <span class="hint" id={`${id}-hint`}>{hint}</span>}
      {error && <div class="error-text" id={`${id}-err`}>{error}</div>}
    </div>
  );
}

/** A form-level error, announced when it appears. */
export function Alert({ message }: { message: string | null | undefined }) {
  if (!message) return null;
  return <div class="alert" role="alert">{message}</div>;
}

interface DialogProps {
  open: boolean;
  title: ComponentChildren;
  onClose(): void;
  children: ComponentChildren;
  /** `panel`: a side panel; `modal`: a centered box */
  variant?: 'panel' | 'modal';
  footer?: ComponentChildren;
  class?: string;
  role?: 'dialog' | 'alertdialog';
}

/**
 * A native modal <dialog> (focus kept inside, the page behind inert, Escape closes): a side
 * panel or a centered box. Focus returns to where it was when it closes.
 */
export function Dialog({ open, title, onClose, children, variant = 'modal', footer, class: cls, role }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      const back = document.activeElement as HTMLElement | null;
      d.showModal();
      const first = d.querySelector<HTMLElement>('[autofocus], .dialog-body input:not([type=hidden]), .dialog-body select, .dialog-body textarea, .dialog-body button');
      first?.focus();
      return () => {
        if (d.open) d.close();
        back?.focus?.();
      };
    }
    return undefined;
  }, [open]);
  if (!open) return null;
  return (
    <dialog
      ref={ref}
      class={`dialog dialog-${variant} ${cls ?? ''}`}
      aria-labelledby={titleId}
      role={role}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
      onClick={(e) => {
        // a click on the backdrop (the dialog element itself, outside its box) closes it
        if (e.target === ref.current) onClose();
      }}
    >
      <div class="dialog-box">
        <header class="dialog-head">
          <h2 id={titleId}>{title}</h2>
          <button type="button" class="icon-btn" aria-label="Close" onClick={onClose}>
            ×
          </button>
        </header>
        <div class="dialog-body">{children}</div>
        {footer && <footer class="dialog-foot">{footer}</footer>}
      </div>
    </dialog>
  );
}

interface ConfirmProps {
  title: string;
  message: ComponentChildren;
  confirmLabel: string;
  /** the text to type before the button enables (deleting a whole collection) */
  requireText?: string;
  onConfirm(): Promise<void> | void;
  onCancel(): void;
}

/** A confirmation box; the action button shows progress and failures stay in the box. */
export function Confirm({ title, message, confirmLabel, requireText, onConfirm, onCancel }: ConfirmProps) {
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const ready = !requireText || typed === requireText;
  const run = async (e: Event) => {
    e.preventDefault();
    if (!ready || busy) return;
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };
  return (
    <Dialog open title={title} onClose={onCancel} role="alertdialog">
      <form onSubmit={run}>
        <div class="confirm-message">{message}</div>
        {requireText && <TextInput label={<>Type <strong>{requireText}</strong> to confirm</>} value={typed} onValue={setTyped} autoComplete="off" />}
        <Alert message={error} />
        <div class="actions">
          <button type="button" class="btn" onClick={onCancel}>Cancel</button>
          <button type="submit" class="btn btn-danger" disabled={!ready || busy} autofocus={!requireText}>
            {busy ? 'Working…' : confirmLabel}
          </button>
        </div>
      </form>
    </Dialog>
  );
}

/** A spinner with a text alternative. */
export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div class="loading" role="status">
      <span class="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

/** The centred box of the signed-out pages (sign-in, first superuser) under the app's name. */
export function SignInFrame({ children }: { children: ComponentChildren }) {
  return (
    <main class="signin" id="main">
      <div class="signin-box">
        <h1 class="brand-title">
          <span class="logo" aria-hidden="true">s</span> svc admin
        </h1>
        {children}
      </div>
    </main>
  );
}

/** The environment variables a read-only settings page comes from, and the doc that describes them. */
export function VariableList({ names, doc }: { names: string[]; doc: string }) {
  return (
    <p class="muted">
      Variables: {names.map((v, i) => <span key={v}>{i > 0 && ', '}<code>{v}</code></span>)}. See {doc}.
    </p>
  );
}

interface ReadOnlyPageProps<T> {
  title: string;
  sub: ComponentChildren;
  /** the API path read once (GET) */
  path: string;
  /** what the answer shows */
  show(data: T): ComponentChildren;
  /** shown below, whatever the answer */
  children?: ComponentChildren;
}

/** A page that shows what one GET answers (loading, then the answer or its error), and `children`. */
export function ReadOnlyPage<T>({ title, sub, path, show, children }: ReadOnlyPageProps<T>) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<T>('GET', path).then(setData).catch((err) => setError(errorMessage(err)));
  }, [path]);
  return (
    <main class="page" id="main">
      <header class="page-head">
        <div>
          <h1>{title}</h1>
          <p class="muted page-sub">{sub}</p>
        </div>
      </header>
      <Alert message={error} />
      {data === null && !error && <Loading />}
      {data !== null && show(data)}
      {children}
    </main>
  );
}
