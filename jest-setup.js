// Jest setup provided by Grafana scaffolding
import './.config/jest-setup';

// Combobox measures its option texts on a canvas; jsdom has none (the scaffold's stub returns
// undefined).
HTMLCanvasElement.prototype.getContext = () => ({ measureText: (text) => ({ width: text.length * 8 }) });
