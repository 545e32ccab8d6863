// Public API of @codefleet/requester: the requester port, the issue and CLI adapters, and the
// words chat adapters share. The conformance suite (test code) is at `@codefleet/requester/conformance`.
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
export {
  createIssueRequester,
  type IssueRequesterOptions,
  type IssueThreads,
  type ProgressLabels,
} from './issue-requester.js';
export { failureComment, retryHint, successComment } from './issue-comments.js';
export { maxQuoteChars, plainReport, type PlainReport, type ReportState } from './plain.js';
