/** Entry point of the admin UI (built by admin/build.mjs into admin-dist/). */
import { render } from 'preact';
import { App } from './app';
import './styles.css';

render(<App />, document.getElementById('app')!);
