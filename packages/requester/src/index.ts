// Public API of @codefleet/requester: the requester port, the CLI adapter, one requester over
// several, report delivery, and the words chat adapters share. GitHub's issue requester lives
// in @codefleet/github. The conformance suite (test code) is at `@codefleet/requester/conformance`.
export { finalReports, type Report, type ReportKind, type Requester } from './port.js';
export { cliRequester, requesterFor } from './requesters.js';
export {
  defaultReportDeadlineMs,
  jobReporter,
  reportSafely,
  type JobReporter,
  type JobReporterOptions,
  type ReportDelivery,
} from './delivery.js';
export { maxQuoteChars, plainReport, retryHint, type PlainReport, type ReportState } from './plain.js';
