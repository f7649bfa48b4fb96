import { render } from 'preact';

render(<main><h1>devdata console</h1></main>, document.getElementById('app') as HTMLElement);
