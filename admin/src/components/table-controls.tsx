/** The records table's controls: the filter box (with the API's error under it) and the pager. */
import type { RefObject } from 'preact';

interface FilterProps {
  inputRef: RefObject<HTMLInputElement | null>;
  draft: string;
  onDraft(v: string): void;
  /** the filter in force ('' for none) */
  applied: string;
  /** the API's answer to the filter, when it refused it */
  error: string | null;
  placeholder: string;
  onApply(): void;
  onClear(): void;
}

export function FilterBar({ inputRef, draft, onDraft, applied, error, placeholder, onApply, onClear }: FilterProps) {
  return (
    <form
      class="filter-bar"
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        onApply();
      }}
    >
      <div class={`field filter-field ${error ? 'has-error' : ''}`}>
        <label for="filter-input">Filter</label>
        <div class="input-row">
          <input
            id="filter-input"
            ref={inputRef}
            type="search"
            class="mono"
            placeholder={placeholder}
            value={draft}
            onInput={(e) => onDraft(e.currentTarget.value)}
            aria-invalid={error ? 'true' : undefined}
            aria-describedby={error ? 'filter-error' : 'filter-hint'}
            autoComplete="off"
            spellcheck={false}
          />
          <button type="submit" class="btn">Apply</button>
          {applied && <button type="button" class="btn" onClick={onClear}>Clear</button>}
        </div>
        {error ? (
          <div class="error-text" id="filter-error" role="alert">{error}</div>
        ) : (
          <div class="hint" id="filter-hint">
            The API's filter grammar: <code>= != &gt; &lt; ~ !~ in</code>, <code>&amp;&amp;</code>, <code>||</code>. Press <kbd>/</kbd> to focus.
          </div>
        )}
      </div>
    </form>
  );
}

interface PagerProps {
  perPage: number;
  sizes: number[];
  onPerPage(n: number): void;
  /** position of the first row shown (1-based; 0 when none) */
  from: number;
  shown: number;
  total: number | null;
  pageNo: number;
  hasPrev: boolean;
  hasNext: boolean;
  onFirst(): void;
  onPrev(): void;
  onNext(): void;
}

const n = (x: number) => x.toLocaleString('en-US');

export function Pager({ perPage, sizes, onPerPage, from, shown, total, pageNo, hasPrev, hasNext, onFirst, onPrev, onNext }: PagerProps) {
  const pages = total !== null ? Math.max(1, Math.ceil(total / perPage)) : null;
  return (
    <nav class="pager" aria-label="Pages">
      <label class="per-page">
        Rows per page{' '}
        <select value={String(perPage)} onChange={(e) => onPerPage(Number(e.currentTarget.value))}>
          {sizes.map((s) => <option key={s} value={s}>{s}</option>)}
        </select>
      </label>
      <span class="page-info" aria-live="polite">
        {shown ? `${n(from)}–${n(from + shown - 1)}` : '0'}
        {total !== null && ` of ${n(total)}`} · page {n(pageNo)}
        {pages !== null && ` of ${n(pages)}`}
      </span>
      <button type="button" class="btn" disabled={!hasPrev} onClick={onFirst}>First</button>
      <button type="button" class="btn" disabled={!hasPrev} onClick={onPrev}>Previous</button>
      <button type="button" class="btn" disabled={!hasNext} onClick={onNext}>Next</button>
    </nav>
  );
}
