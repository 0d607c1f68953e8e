import Foundation

/// One contender's figures in one round, by metric name.
typealias Figures = [String: Double]

/// A metric a scenario reports: its name, unit, and whether bigger is better.
struct Metric: Codable, Sendable {
    var name: String
    var unit: String
    var higherIsBetter: Bool
}

/// A way of doing the scenario's work: one row of its table.
struct Contender: Sendable {
    var name: String
    /// Why it does not run, if it does not ("not built yet", "curl is not installed").
    var unavailable: String?
    var run: @Sendable () async throws -> Figures

    init(_ name: String, unavailable: String? = nil, run: @escaping @Sendable () async throws -> Figures = { [:] }) {
        self.name = name
        self.unavailable = unavailable
        self.run = run
    }
}

/// min / median / max of a metric over the rounds.
struct Spread: Codable, Sendable {
    var min: Double
    var median: Double
    var max: Double

    init?(_ values: [Double]) {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        min = sorted[0]
        max = sorted[sorted.count - 1]
        median = sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}

struct ContenderReport: Codable, Sendable {
    var contender: String
    var status: String
    /// Per metric: the spread of its values over the rounds.
    var metrics: [String: Spread]
    /// Per metric: the spread over the rounds of (this contender / the baseline in the same round).
    var ratioToBaseline: [String: Spread]
    /// Every round's raw figures.
    var rounds: [Figures]
}

struct ScenarioReport: Codable, Sendable {
    var name: String
    var details: String
    var baseline: String
    var metrics: [Metric]
    var contenders: [ContenderReport]
    var notes: [String]
}

/// Runs contenders in interleaved rounds (A B C, A B C, ...) so that a noisy machine hurts all alike,
/// and compares each to the baseline within the same round.
struct Scenario {
    var name: String
    var details: String
    var metrics: [Metric]
    var baseline: String
    var contenders: [Contender]
    var notes: [String] = []

    func run(rounds: Int, log: (String) -> Void) async throws -> ScenarioReport {
        var results: [String: [Figures]] = [:]
        for round in 1...rounds {
            for contender in contenders where contender.unavailable == nil {
                log("  round \(round)/\(rounds): \(contender.name)")
                results[contender.name, default: []].append(try await contender.run())
            }
        }
        let baselineRounds = results[baseline] ?? []
        let reports = contenders.map { contender -> ContenderReport in
            let rounds = results[contender.name] ?? []
            var metricSpreads: [String: Spread] = [:]
            var ratioSpreads: [String: Spread] = [:]
            for metric in metrics {
                metricSpreads[metric.name] = Spread(rounds.compactMap { $0[metric.name] })
                let ratios = zip(rounds, baselineRounds).compactMap { mine, base -> Double? in
                    guard let value = mine[metric.name], let reference = base[metric.name], reference != 0 else { return nil }
                    return value / reference
                }
                ratioSpreads[metric.name] = Spread(ratios)
            }
            return ContenderReport(
                contender: contender.name, status: contender.unavailable ?? "ok",
                metrics: metricSpreads, ratioToBaseline: ratioSpreads, rounds: rounds)
        }
        return ScenarioReport(name: name, details: details, baseline: baseline, metrics: metrics, contenders: reports, notes: notes)
    }
}

enum Table {
    static func render(_ report: ScenarioReport) -> String {
        var lines = ["", "== \(report.name) ==", report.details, "baseline: \(report.baseline); ratios are per round, contender / baseline"]
        for metric in report.metrics {
            lines.append("")
            lines.append("  \(metric.name) [\(metric.unit)]\(metric.higherIsBetter ? " (higher is better)" : " (lower is better)")")
            lines.append("    " + pad("contender", 26) + pad("min", 14) + pad("median", 14) + pad("max", 14) + "ratio (median, min-max)")
            for contender in report.contenders {
                guard let spread = contender.metrics[metric.name] else {
                    if contender.status != "ok" { lines.append("    " + pad(contender.contender, 26) + contender.status) }
                    continue
                }
                var line = "    " + pad(contender.contender, 26) + pad(format(spread.min), 14) + pad(format(spread.median), 14) + pad(format(spread.max), 14)
                if let ratio = contender.ratioToBaseline[metric.name], contender.contender != report.baseline {
                    line += "\(format(ratio.median))x (\(format(ratio.min))-\(format(ratio.max)))"
                } else if contender.contender == report.baseline {
                    line += "1x (baseline)"
                }
                lines.append(line)
            }
        }
        for note in report.notes { lines.append("  note: \(note)") }
        return lines.joined(separator: "\n")
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    static func format(_ value: Double) -> String {
        if value == 0 { return "0" }
        let magnitude = abs(value)
        if magnitude >= 1000 { return String(format: "%.0f", value) }
        if magnitude >= 10 { return String(format: "%.1f", value) }
        if magnitude >= 0.01 { return String(format: "%.3f", value) }
        return String(format: "%.2e", value)
    }
}
