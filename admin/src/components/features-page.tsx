/** Declared feature flags and experiments with their overrides (stored as settings). */
import { useEffect, useState } from 'preact/hooks';
import { api, errorMessage } from '../api';
import { useApp } from '../state';
import { Alert, Loading, Select, TextInput } from './ui';

interface Flag {
  name: string;
  default: boolean;
  description: string;
  override: string | null;
}

interface Experiment {
  name: string;
  variants: string[];
  weights: number[];
  sticky: boolean;
  description: string;
  weight_override: string | null;
}

export function FeaturesPage() {
  const { notify } = useApp();
  const [data, setData] = useState<{ flags: Flag[]; experiments: Experiment[] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = () => api<{ flags: Flag[]; experiments: Experiment[] }>('GET', '/api/features').then(setData).catch((err) => setError(errorMessage(err)));
  useEffect(() => void load(), []);

  const override = async (key: string, value: string | null, what: string) => {
    setError(null);
    try {
      if (value === null) await api('DELETE', `/api/settings/${encodeURIComponent(key)}`);
      else await api('PUT', `/api/settings/${encodeURIComponent(key)}`, { json: { value } });
      notify(`${what} updated.`);
      await load();
    } catch (err) {
      setError(errorMessage(err));
    }
  };

  return (
    <main class="page" id="main">
      <header class="page-head">
        <div>
          <h1>Flags and experiments</h1>
          <p class="muted page-sub">Declared by the app; an override applies at once (clients get the realtime <code>__features</code> signal).</p>
        </div>
      </header>
      <Alert message={error} />
      {!data && !error && <Loading />}
      {data && (
        <>
          <section class="card" aria-labelledby="flags-title">
            <h2 id="flags-title">Flags</h2>
            {data.flags.length === 0 && <p class="muted">No flags are declared.</p>}
            <ul class="feature-list">
              {data.flags.map((f) => (
                <li key={f.name} class="feature">
                  <div>
                    <strong class="mono">{f.name}</strong> <span class="muted">default {String(f.default)}</span>
                    {f.description && <p class="muted">{f.description}</p>}
                  </div>
                  <Select
                    label={`Override for ${f.name}`}
                    value={f.override ?? ''}
                    onValue={(v) => {
                      if (v === '' && f.override === null) return;
                      void override(`flag:${f.name}`, v === '' ? null : v, `Flag ${f.name}`);
                    }}
                    options={[{ value: '', label: 'No override (default)' }, { value: 'true', label: 'On (true)' }, { value: 'false', label: 'Off (false)' }]}
                  />
                </li>
              ))}
            </ul>
          </section>
          <section class="card" aria-labelledby="exp-title">
            <h2 id="exp-title">Experiments</h2>
            {data.experiments.length === 0 && <p class="muted">No experiments are declared.</p>}
            <ul class="feature-list">
              {data.experiments.map((x) => (
                <ExperimentRow key={x.name} x={x} onSave={(v) => override(`exp:${x.name}:weights`, v, `Experiment ${x.name}`)} />
              ))}
            </ul>
          </section>
        </>
      )}
    </main>
  );
}

function ExperimentRow({ x, onSave }: { x: Experiment; onSave(v: string | null): Promise<void> }) {
  const [v, setV] = useState(x.weight_override ?? '');
  return (
    <li class="feature">
      <div>
        <strong class="mono">{x.name}</strong>{' '}
        <span class="muted">
          {x.variants.map((name, i) => `${name} ${x.weights[i]}`).join(' · ')}
          {x.sticky ? ' · sticky' : ''}
        </span>
        {x.description && <p class="muted">{x.description}</p>}
      </div>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          if (!v.trim() && x.weight_override === null) return;
          void onSave(v.trim() ? v.trim() : null);
        }}
      >
        <TextInput label={`Weights override for ${x.name}`} value={v} onValue={setV} placeholder={JSON.stringify(x.weights)} hint="A JSON array, one weight per variant; empty to clear." spellcheck={false} />
        <button type="submit" class="btn align-end">Apply</button>
      </form>
    </li>
  );
}
