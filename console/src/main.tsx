import { render } from 'preact';
import { App } from './app';
import './styles.css';

const container = document.getElementById('app') as HTMLElement;
// The page's own "Loading" line goes: Preact adds to what a container holds.
container.replaceChildren();
render(<App />, container);
