import { LabIcon } from '@jupyterlab/ui-components';

const agentsSvg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <circle cx="12" cy="4.5" r="2.5"/>
    <circle cx="5" cy="18.5" r="2.5"/>
    <circle cx="19" cy="18.5" r="2.5"/>
    <path d="M11 7h2v4h6.5v5h-2v-3h-11v3h-2v-5H11z"/>
  </g>
</svg>`;

export const agentsIcon = new LabIcon({
  name: 'prime-kernel:agents',
  svgstr: agentsSvg
});
