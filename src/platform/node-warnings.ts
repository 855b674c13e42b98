/**
 * The AWS SDK warns at every S3Client construction that its releases after January 2027 will need
 * Node 22. It is not actionable at run time (the pinned SDK keeps working) and it buries real
 * warnings, so it alone is dropped; every other warning is printed as Node would.
 */
let installed = false;

export function quietAwsNodeVersionWarning(): void {
  if (installed) return;
  installed = true;
  const listeners = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (
      warning.name === 'NodeVersionSupportWarning' ||
      /AWS SDK for JavaScript \(v3\)[\s\S]*node >=22/.test(warning.message)
    )
      return;
    if (listeners.length) for (const l of listeners) l(warning);
    else console.warn(warning);
  });
}
