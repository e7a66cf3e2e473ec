// The node-link diagram (Cytoscape.js): elements are added as they are loaded, so the picture grows as the user
// follows nodes. Types get colours, relations their type as a label. Beside the canvas a list states the same graph
// as text, with a button per node, for keyboard and screen-reader users.
import cytoscape, { type Core, type ElementDefinition } from 'cytoscape';
import { type GraphElement, labelOf } from './api.js';
import { h, replace } from './dom.js';
import { colourOf } from './types.js';

// Cytoscape adds an inline <style> for `position: relative` on its containers unless an element with this id
// exists; the page's Content-Security-Policy refuses inline styles, so styles.css has the rule and this marks it.
const CYTOSCAPE_STYLESHEET = '__________cytoscape_stylesheet';
if (!document.getElementById(CYTOSCAPE_STYLESHEET))
  document.head.append(h('meta', { id: CYTOSCAPE_STYLESHEET, name: 'cytoscape-stylesheet', content: 'styles.css' }));

export class Diagram {
  readonly element: HTMLElement;
  private readonly cy: Core;
  private readonly canvas: HTMLElement;
  private readonly text: HTMLElement;
  private pendingLayout = false;
  private pendingMeasure = false;
  /** Cytoscape keeps where its container is on the screen; a scroll of the page moves it. */
  private readonly remeasure = () => {
    if (this.pendingMeasure) return;
    this.pendingMeasure = true;
    requestAnimationFrame(() => {
      this.pendingMeasure = false;
      if (this.canvas.isConnected) this.cy.resize();
    });
  };

  constructor(
    label: string,
    /** Called with a node's id when it is clicked or chosen from the list. */
    private readonly onOpen: (id: string) => void,
  ) {
    this.canvas = h('div', {
      class: 'diagram-canvas',
      role: 'img',
      'aria-label': `${label} (the list below states it as text)`,
    });
    this.text = h('ul', { class: 'diagram-text' });
    this.element = h(
      'section',
      { class: 'diagram', 'aria-label': label },
      this.canvas,
      h('details', null, h('summary', null, 'The diagram as text'), this.text),
    );
    this.cy = cytoscape({
      container: this.canvas,
      // No layout yet: the container is not on the page (it has no size) until the view holding it is shown.
      layout: { name: 'preset' },
      minZoom: 0.2,
      maxZoom: 3,
      style: [
        {
          selector: 'node',
          style: {
            'background-color': 'data(colour)',
            label: 'data(label)',
            color: '#1b1f24',
            'font-size': 12,
            'text-valign': 'bottom',
            'text-margin-y': 4,
            'text-wrap': 'ellipsis',
            'text-max-width': '120px',
            width: 26,
            height: 26,
          },
        },
        { selector: 'node.focus', style: { 'border-width': 4, 'border-color': '#d4a017', width: 34, height: 34 } },
        {
          selector: 'edge',
          style: {
            width: 2,
            'line-color': '#8a94a6',
            'target-arrow-color': '#8a94a6',
            'target-arrow-shape': 'triangle',
            'curve-style': 'bezier',
            label: 'data(type)',
            'font-size': 10,
            color: '#394150',
            'text-rotation': 'autorotate',
            'text-background-color': '#ffffff',
            'text-background-opacity': 0.85,
            'text-background-padding': '2px',
          },
        },
      ],
    });
    this.cy.on('tap', 'node', (event) => this.onOpen(event.target.id() as string));
    // Cytoscape listens for scrolls only on the ancestors its container had when it started, and this one starts
    // before it is on the page: without this, clicks after a scroll land beside the nodes.
    window.addEventListener('scroll', this.remeasure, { passive: true, capture: true });
    window.addEventListener('resize', this.remeasure, { passive: true });
  }

  /** Stops listening to the window and frees the canvas. */
  destroy(): void {
    window.removeEventListener('scroll', this.remeasure, { capture: true });
    window.removeEventListener('resize', this.remeasure);
    this.cy.destroy();
  }

  /** Adds nodes and relations not yet shown (a relation also adds its ends, when they are known). */
  add(elements: GraphElement[]): void {
    const definitions: ElementDefinition[] = [];
    const known = (id: string) => this.cy.getElementById(id).nonempty() || definitions.some((d) => d.data.id === id);
    for (const element of elements) {
      if (element.start !== undefined || known(element.id)) continue;
      definitions.push({
        group: 'nodes',
        data: { id: element.id, label: labelOf(element), type: element.type, colour: colourOf(element.type) },
      });
    }
    for (const element of elements) {
      if (element.start === undefined || element.end === undefined || known(element.id)) continue;
      // A relation to an element the user cannot read comes without that node: it is drawn once the node is known.
      if (!known(element.start) || !known(element.end)) continue;
      definitions.push({
        group: 'edges',
        data: { id: element.id, source: element.start, target: element.end, type: element.type },
      });
    }
    if (definitions.length === 0) return;
    this.cy.add(definitions);
    this.scheduleLayout();
  }

  /** Marks the node that is open. */
  focus(id: string): void {
    this.cy.nodes().removeClass('focus');
    this.cy.getElementById(id).addClass('focus');
    this.renderText();
  }

  /** Takes an element off the picture (it was deleted, or is no longer readable). */
  remove(id: string): void {
    this.cy.getElementById(id).remove();
    this.renderText();
  }

  clear(): void {
    this.cy.elements().remove();
    this.renderText();
  }

  /** Once the container has its size: cytoscape measures it when laying out. */
  private scheduleLayout(): void {
    if (this.pendingLayout) return;
    this.pendingLayout = true;
    requestAnimationFrame(() => {
      this.pendingLayout = false;
      // Cytoscape measures its container: wait until the view holding it is on the page.
      if (!this.canvas.isConnected) {
        this.scheduleLayout();
        return;
      }
      this.cy.resize();
      this.cy.layout({ name: 'cose', animate: false, padding: 30, nodeDimensionsIncludeLabels: true }).run();
      this.cy.fit(undefined, 30);
      // A few nodes would fill the canvas at a large zoom; keep labels at about their size.
      if (this.cy.zoom() > 1.2) {
        this.cy.zoom(1.2);
        this.cy.center();
      }
      this.renderText();
    });
  }

  private renderText(): void {
    const nodes = this.cy
      .nodes()
      .map((node) =>
        h(
          'li',
          { 'data-id': node.id() },
          h(
            'button',
            { type: 'button', class: 'link', onclick: () => this.onOpen(node.id()) },
            node.data('label') as string,
          ),
          ` (${node.data('type') as string})`,
          node.hasClass('focus') ? ' (open)' : null,
        ),
      );
    const edges = this.cy
      .edges()
      .map((edge) =>
        h(
          'li',
          { 'data-id': edge.id() },
          `${edge.source().data('label') as string} —${edge.data('type') as string}→ ${edge.target().data('label') as string}`,
        ),
      );
    replace(this.text, nodes, edges);
  }
}
