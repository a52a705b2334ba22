// Jest setup provided by Grafana scaffolding
import './.config/jest-setup';
import { configure } from '@testing-library/react';

// findBy* and waitFor wait for their condition; their default of 1 s is a clock that a loaded
// 2-core machine overruns (a Combobox menu opening after a resource call). They return as soon
// as the condition holds, so the headroom costs nothing when it passes.
configure({ asyncUtilTimeout: 20000 });

// Combobox measures its option texts on a canvas; jsdom has none (the scaffold's stub returns
// undefined).
HTMLCanvasElement.prototype.getContext = () => ({ measureText: (text) => ({ width: text.length * 8 }) });
